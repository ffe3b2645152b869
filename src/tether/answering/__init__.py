"""Answering: the support gate (`gate`), the context within a token budget (`context`), the
answer schema, prompts and parsing (`answer`), and `ask()` over parts the caller built
(`pipeline`).

What it cannot do: it builds no part itself (no index, no model, no provider): the Workspace
in `tether.app` hands them over; it knows English and French answers only.
"""

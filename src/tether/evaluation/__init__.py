"""Measuring: question sets and relevance by location (`questions`), retrieval metrics
(`metrics`, `retrieval_eval`), the HTML report (`report`), the verifier on labelled claims
(`verifier_eval`) and the support gate's floors (`calibration`).

What it cannot do: it scores retrieval and the verifier, not answers yet; it loads no model
and opens no index (the caller passes the store, the retriever and the judge).
"""

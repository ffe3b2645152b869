"""Providers behind the `Provider` protocol: OpenAI-compatible servers (`openai`), Anthropic
(`anthropic`), the local Qwen2.5 model through llama.cpp (`local`), the extractive no-model
answerer (`extractive`), record/replay (`replay`), and third-party ones from the entry-point
group `tether.providers`; `registry` holds each name's spec (factory, capabilities),
`factory.make_provider` picks one from Settings; `base` holds retries and prices.

What it cannot do: a provider only sends a request and returns a Completion; it checks no
answer (the verifier does) and downloads no model weights.
"""

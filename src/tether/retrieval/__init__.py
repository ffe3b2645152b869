"""Ranking chunks for a query: BM25, dense, hybrid (fusion) and rerank (`retriever`), the
sentence reranker and its alternatives (`rerank`).

What it cannot do: it runs no SQL and holds no vector index (the Store answers filtered
lexical and dense queries); filters are the store's, applied before ranking.
"""

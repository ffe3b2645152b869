"""LlamaIndex set up as its documentation recommends for hybrid retrieval: SimpleDirectoryReader,
the default node parser (SentenceSplitter, 1,024 tokens), VectorStoreIndex, BM25Retriever and
QueryFusionRetriever with reciprocal-rank fusion (one query: no LLM query generation), given
tether's e5 embedder through a custom BaseEmbedding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import TextNode
from llama_index.retrievers.bm25 import BM25Retriever
from pydantic import PrivateAttr

from ..common import Passage


class E5Embedding(BaseEmbedding):
    _emb: Any = PrivateAttr()

    def __init__(self, emb: Any, **kw: Any) -> None:
        super().__init__(model_name="e5", embed_batch_size=16, **kw)
        self._emb = emb

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._emb.embed_queries([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._emb.embed_passages([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._emb.embed_passages(texts).tolist()


def parse(folder: Path, sources: list[str]) -> list[TextNode]:
    docs = SimpleDirectoryReader(input_files=[str(folder / s) for s in sources]).load_data()
    for d in docs:
        d.metadata["source"] = Path(d.metadata["file_path"]).relative_to(folder).as_posix()
    return SentenceSplitter(chunk_size=1024, chunk_overlap=20).get_nodes_from_documents(docs)


def given_nodes(chunks: list[tuple[str, str, Any]]) -> list[TextNode]:
    return [TextNode(text=t, metadata={"source": s}, embedding=v.tolist()) for s, t, v in chunks]


class LlamaSearch:
    def __init__(self, nodes: list[TextNode], emb: Any, depth: int) -> None:
        Settings.llm = MockLLM()
        Settings.embed_model = E5Embedding(emb)
        index = VectorStoreIndex(nodes)
        bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=depth)
        self.fusion = QueryFusionRetriever(
            [index.as_retriever(similarity_top_k=depth), bm25],
            similarity_top_k=depth, num_queries=1, mode="reciprocal_rerank", use_async=False,
        )

    def search(self, query: str, k: int, as_of=None, audience: str = "") -> list[Passage]:
        found = self.fusion.retrieve(query)[:k]
        return [Passage(n.node.metadata["source"], n.node.get_content()) for n in found]

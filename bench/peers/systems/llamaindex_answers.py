"""LlamaIndex answering with citations as its documentation recommends: CitationQueryEngine
(its default prompts, compact response mode, 512-token citation chunks) over the hybrid
retriever of `llamaindex_system.py` (vector + BM25, reciprocal-rank fusion), fed tether's
chunks and e5 vectors, answered by `OpenAILike` at an OpenAI-compatible endpoint.

Each node keeps its tether chunk ID in its metadata (CitationQueryEngine gives the sources it
cuts from a node fresh IDs but copies the metadata), so a source number maps back to a chunk.
A question's date and audience are applied as in the retrieval comparison, after ranking: the
passages from versions the question may not see are dropped, then the top 5 are kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import CitationQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.llms.openai_like import OpenAILike
from pydantic import PrivateAttr

from .llamaindex_system import LlamaSearch

DEPTH = 50


def chunk_nodes(chunks: list[tuple[str, str, str, Any]]) -> list[TextNode]:
    """(chunk ID, source, text, vector) → nodes carrying the chunk ID (not shown to the LLM)."""
    return [
        TextNode(
            id_=cid, text=text, embedding=vec.tolist(),
            metadata={"source": src, "chunk_id": cid},
            excluded_llm_metadata_keys=["source", "chunk_id"],
            excluded_embed_metadata_keys=["source", "chunk_id"],
        )
        for cid, src, text, vec in chunks
    ]  # fmt: skip


class Allowed(BaseNodePostprocessor):
    """Drops the nodes `keep(source)` refuses, then keeps the first `k`."""

    k: int = 5
    _keep: Callable[[str], bool] = PrivateAttr()

    def __init__(self, keep: Callable[[str], bool], k: int = 5) -> None:
        super().__init__(k=k)
        self._keep = keep

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return [n for n in nodes if self._keep(n.node.metadata["source"])][: self.k]


class LlamaAnswers:
    def __init__(self, nodes: list[TextNode], emb: Any, base_url: str, model: str,
                 max_tokens: int, timeout: float) -> None:  # fmt: skip
        self.search = LlamaSearch(nodes, emb, DEPTH)  # sets Settings.embed_model (e5)
        self.llm = OpenAILike(
            model=model, api_base=base_url, api_key="not-needed", is_chat_model=True,
            temperature=0.0, max_tokens=max_tokens, context_window=4096, timeout=timeout,
            max_retries=0,
        )  # fmt: skip

    def ask(self, question: str, keep: Callable[[str], bool], k: int) -> tuple[str, list[str]]:
        """The answer text and, for each source number (1-based), its tether chunk ID."""
        engine = CitationQueryEngine(
            retriever=self.search.fusion, llm=self.llm, node_postprocessors=[Allowed(keep, k)]
        )
        response = engine.query(question)
        return str(response.response or ""), [
            n.node.metadata["chunk_id"] for n in response.source_nodes
        ]

"""Haystack 2 set up as its hybrid-retrieval tutorial does: converters per file type,
DocumentCleaner, DocumentSplitter (512 words, 32 overlap), an InMemoryDocumentStore,
InMemoryBM25Retriever + InMemoryEmbeddingRetriever joined by DocumentJoiner with
reciprocal-rank fusion, given tether's e5 embedder through custom components."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haystack import Document, Pipeline, component
from haystack.components.converters import (
    HTMLToDocument,
    MarkdownToDocument,
    PyPDFToDocument,
    TextFileToDocument,
)
from haystack.components.joiners import DocumentJoiner
from haystack.components.preprocessors import DocumentCleaner, DocumentSplitter
from haystack.components.retrievers.in_memory import (
    InMemoryBM25Retriever,
    InMemoryEmbeddingRetriever,
)
from haystack.document_stores.in_memory import InMemoryDocumentStore

from ..common import Passage

CONVERTERS = {".md": MarkdownToDocument, ".html": HTMLToDocument, ".pdf": PyPDFToDocument}


@component
class E5QueryEmbedder:
    def __init__(self, emb: Any) -> None:
        self.emb = emb

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict:
        return {"embedding": self.emb.embed_queries([text])[0].tolist()}


def parse(folder: Path, sources: list[str]) -> list[Document]:
    docs: list[Document] = []
    for s in sources:
        converter = CONVERTERS.get(Path(s).suffix.lower(), TextFileToDocument)()
        out = converter.run(sources=[folder / s], meta={"source": s})["documents"]
        docs.extend(out)
    docs = DocumentCleaner().run(documents=docs)["documents"]
    splitter = DocumentSplitter(split_by="word", split_length=512, split_overlap=32)
    splitter.warm_up()
    return splitter.run(documents=docs)["documents"]


def embed(docs: list[Document], emb: Any) -> list[Document]:
    vecs = emb.embed_passages([d.content or "" for d in docs])
    for d, v in zip(docs, vecs, strict=True):
        d.embedding = v.tolist()
    return docs


def given_docs(chunks: list[tuple[str, str, Any]]) -> list[Document]:
    return [Document(content=t, meta={"source": s}, embedding=v.tolist()) for s, t, v in chunks]


class HaystackSearch:
    def __init__(self, docs: list[Document], emb: Any, depth: int) -> None:
        store = InMemoryDocumentStore()
        store.write_documents(docs)
        p = Pipeline()
        p.add_component("text_embedder", E5QueryEmbedder(emb))
        p.add_component("embedding_retriever", InMemoryEmbeddingRetriever(store, top_k=depth))
        p.add_component("bm25_retriever", InMemoryBM25Retriever(store, top_k=depth))
        p.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=depth))
        p.connect("text_embedder", "embedding_retriever")
        p.connect("bm25_retriever", "joiner")
        p.connect("embedding_retriever", "joiner")
        self.pipeline = p

    def search(self, query: str, k: int, as_of=None, audience: str = "") -> list[Passage]:
        out = self.pipeline.run({"text_embedder": {"text": query}, "bm25_retriever": {"query": query}})
        return [Passage(d.meta["source"], d.content or "") for d in out["joiner"]["documents"][:k]]

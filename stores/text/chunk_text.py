"""What is embedded and indexed for a chunk: the worker hashes it (a chunk's
``content_hash``, what a vector cache is keyed by), the sparse index and the dense fill
read it."""

from __future__ import annotations

from stores.records import ChunkRecord

__all__ = ["embed_text", "text_of"]


def embed_text(chunk: ChunkRecord) -> str:
    """A ``path qualname`` header, the doc when the text does not hold it (a leading
    comment sits above the symbol's lines), then the text."""
    return text_of(chunk.path, chunk.qualname, chunk.doc, chunk.text)


def text_of(path: str, qualname: str | None, doc: str | None, text: str) -> str:
    """`embed_text` of a chunk not yet built."""
    parts = [f"{path} {qualname}" if qualname else path]
    if doc and doc.strip().split("\n", 1)[0] not in text:
        parts.append(doc)
    parts.append(text)
    return "\n".join(parts)

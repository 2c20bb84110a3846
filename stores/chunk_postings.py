"""A repository's chunks as counted tokens, carried in its state snapshot (issue 16 §2).

A replica loading a snapshot indexed every chunk's text for BM25: sympy's 37,475 chunks
are 2.5 M tokens, ~1.8 s of tokenizing on each new replica (docs/PERFORMANCE.md,
"Restarts without resolving"). The worker writes the counts once, beside the state, and
a replica builds its index from them (`query.search.sparse.SparseIndex.add_files`).

What is counted is exactly what the sparse index counts: per chunk, in the snapshot's
order (files by path, each file's chunks in order), the distinct tokens of
``tokenize(embed_text(chunk))`` in first-seen order and how often each occurs (what
``collections.Counter`` of the tokens holds). A vocabulary in first-seen order over all
chunks names the tokens; each posting is its index there.

Trust. Counts are only as good as the tokenizer that made them: `TOKENIZER` is a digest
of the tokenizer's and the embedded text's code, and counts made by another are not
used (`usable`). They are tied to the chunks they were made of by ``digest``, over
every chunk's id and content hash (the sha256 of its embedded text) in order: a reader
checks it against the state it loaded and tokenizes itself when it differs. Decoding
checks every array's length and bound; bytes that do not read are `PostingsRejected`.
Pure: values in, values out.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import uuid
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from stores.records import ChunkRecord, FileRecord
from stores.text import chunk_text, tokens
from stores.text.chunk_text import embed_text
from stores.text.tokens import tokenize

FORMAT = 1
"""Bumped whenever the section's layout changes (part of `TOKENIZER`)."""

Ints = npt.NDArray[np.int32]


class PostingsRejected(ValueError):
    """Bytes that are not chunk postings this build reads."""


@cache
def tokenizer_fingerprint() -> str:
    """A digest of the code that turns a chunk into tokens (`stores.text.tokens`,
    `stores.text.chunk_text`) and of this format: counts made by other code are
    not used."""
    digest = hashlib.sha256(f"chunk-postings/{FORMAT}\n".encode())
    for module in (tokens, chunk_text):
        try:
            digest.update(inspect.getsource(module).encode())
        except (OSError, TypeError):  # no source shipped: this process's counts only
            digest.update(uuid.uuid4().bytes)
    return digest.hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class ChunkPostings:
    """Counted tokens of a sequence of chunks (see the module).

    Chunk ``k`` holds the postings ``starts[k]:starts[k + 1]``: ``terms`` (indexes into
    ``vocabulary``) and ``tfs`` (counts, at least 1), in first-seen order."""

    tokenizer: str
    digest: str
    vocabulary: tuple[str, ...]
    starts: npt.NDArray[np.int64]
    terms: Ints
    tfs: Ints

    def __len__(self) -> int:
        return len(self.starts) - 1

    @property
    def usable(self) -> bool:
        """Whether this build's tokenizer made them."""
        return self.tokenizer == tokenizer_fingerprint()


def chunks_in_order(files: Iterable[FileRecord]) -> Iterable[ChunkRecord]:
    """The chunks of ``files`` as a snapshot orders them (files as given, by path)."""
    for record in files:
        yield from record.chunks


def chunks_digest(chunks: Iterable[ChunkRecord]) -> str:
    """What ties postings to their chunks: each chunk's id and content hash, in order."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(f"{chunk.id}\0{chunk.content_hash}\n".encode())
    return digest.hexdigest()


Counted = tuple[tuple[str, ...], bytes]
"""A chunk's distinct tokens in first-seen order and their counts (int32 bytes)."""


class CountCache:
    """Each chunk's counts by its content hash (the sha256 of its embedded text, all
    that its tokens depend on), kept from one `count` of a repository to the next: a
    worker writes a repository's snapshot after each burst of edits, and most of its
    chunks are the same (tokenizing all of sympy's is ~2 s). What the last count did not
    meet is dropped, so it holds one repository's current chunks (~0.4 KB each)."""

    def __init__(self) -> None:
        self._held: dict[str, Counted] = {}

    def __len__(self) -> int:
        return len(self._held)

    def replace(self, held: dict[str, Counted]) -> None:
        self._held = held

    def get(self, content_hash: str) -> Counted | None:
        return self._held.get(content_hash)


def _counted(chunk: ChunkRecord) -> Counted:
    counts = Counter(tokenize(embed_text(chunk)))
    return tuple(counts), array("i", counts.values()).tobytes()


def count(chunks: Sequence[ChunkRecord], cache: CountCache | None = None) -> ChunkPostings:
    """The postings of ``chunks`` (what the sparse index would count of each); ``cache``:
    the counts of a previous call, reused for the chunks it met, then replaced by this
    call's."""
    index: dict[str, int] = {}
    terms: list[int] = []
    tfs = array("i")
    starts = [0]
    setdefault = index.setdefault
    seen: dict[str, Counted] = {}
    for chunk in chunks:
        key = chunk.content_hash
        counted = seen.get(key) or (cache.get(key) if cache is not None else None)
        if counted is None:
            counted = _counted(chunk)
        seen[key] = counted
        names, counts = counted
        terms.extend([setdefault(term, len(index)) for term in names])
        tfs.frombytes(counts)
        starts.append(len(terms))
    if cache is not None:
        cache.replace(seen)
    return ChunkPostings(
        tokenizer=tokenizer_fingerprint(),
        digest=chunks_digest(chunks),
        vocabulary=tuple(index),
        starts=np.array(starts, dtype=np.int64),
        terms=np.array(terms, dtype=np.int32),
        tfs=np.frombuffer(tfs, dtype=np.int32).copy(),
    )


def encode(postings: ChunkPostings) -> bytes:
    """One JSON line (tokenizer, digest, sizes), the vocabulary ('\\n'-joined: a token
    is a run of word characters), then starts (int64), terms and tfs (int32), little
    endian."""
    vocabulary = "\n".join(postings.vocabulary).encode()
    about = {
        "tokenizer": postings.tokenizer,
        "digest": postings.digest,
        "chunks": len(postings),
        "postings": len(postings.terms),
        "terms": len(postings.vocabulary),
        "vocabulary_bytes": len(vocabulary),
    }
    return b"".join(
        (
            json.dumps(about, sort_keys=True).encode(),
            b"\n",
            vocabulary,
            postings.starts.astype("<i8").tobytes(),
            postings.terms.astype("<i4").tobytes(),
            postings.tfs.astype("<i4").tobytes(),
        )
    )


def decode(raw: bytes) -> ChunkPostings:
    """`encode`'s bytes back, every size and bound checked; `PostingsRejected` else."""
    try:
        end = raw.index(b"\n")
        about = json.loads(raw[:end])
        chunks, count_, terms_n = (int(about[k]) for k in ("chunks", "postings", "terms"))
        vocabulary_bytes = int(about["vocabulary_bytes"])
        tokenizer, digest = str(about["tokenizer"]), str(about["digest"])
    except (ValueError, KeyError, TypeError) as exc:
        raise PostingsRejected(f"header: {exc!r}"[:300]) from exc
    at = end + 1
    sizes = (vocabulary_bytes, 8 * (chunks + 1), 4 * count_, 4 * count_)
    if min(chunks, count_, terms_n, vocabulary_bytes) < 0 or len(raw) != at + sum(sizes):
        raise PostingsRejected(f"{len(raw)} bytes, the header says otherwise")
    words = raw[at : at + vocabulary_bytes].decode("utf-8", errors="strict") if terms_n else ""
    vocabulary = tuple(words.split("\n")) if terms_n else ()
    at += vocabulary_bytes
    starts = np.frombuffer(raw, dtype="<i8", count=chunks + 1, offset=at).astype(np.int64)
    at += sizes[1]
    terms = np.frombuffer(raw, dtype="<i4", count=count_, offset=at).astype(np.int32)
    tfs = np.frombuffer(raw, dtype="<i4", count=count_, offset=at + sizes[2]).astype(np.int32)
    if len(vocabulary) != terms_n:
        raise PostingsRejected(f"{len(vocabulary)} terms, the header says {terms_n}")
    if starts[0] != 0 or starts[-1] != count_ or (np.diff(starts) < 0).any():
        raise PostingsRejected("the chunks' starts do not span the postings")
    if count_ and (terms.min() < 0 or terms.max() >= terms_n or tfs.min() < 1):
        raise PostingsRejected("a posting names no term, or counts less than once")
    return ChunkPostings(tokenizer, digest, vocabulary, starts, terms, tfs)


@dataclass(frozen=True, slots=True)
class CountedChunks:
    """Postings tied to the files they were counted of (`of`): where each file's chunks
    begin in them (``first``) and how many it has (``sizes``)."""

    postings: ChunkPostings
    first: dict[str, int]
    sizes: dict[str, int]

    @classmethod
    def of(cls, postings: ChunkPostings, files: Sequence[FileRecord]) -> CountedChunks | None:
        """``postings`` for ``files`` (in the order they were counted), or None when they
        were not counted of these chunks (their digest differs) or by this tokenizer."""
        if not postings.usable or len(postings) != sum(len(f.chunks) for f in files):
            return None
        if chunks_digest(chunks_in_order(files)) != postings.digest:
            return None
        first: dict[str, int] = {}
        sizes: dict[str, int] = {}
        at = 0
        for record in files:
            if record.chunks:
                first[record.path], sizes[record.path] = at, len(record.chunks)
                at += len(record.chunks)
        return cls(postings, first, sizes)

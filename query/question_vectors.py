"""Question vectors, kept in a bounded LRU: a question asked again is not embedded again.

A search embeds its question (all-MiniLM-L6-v2 int8 on one thread: 3-5 ms of a 10 ms
django search, `tests/bench/query_profile.py`, issue 15) and agents repeat questions
(a context pack's search after a search, sessions, retries). A vector depends on the
model and the text only, never on the repository's state, so the key is (embedder
name, question) and an entry never goes stale; the bound keeps its memory fixed
(384 float32 = 1.5 KB a question: 1,024 entries are 1.6 MB).

The cached rows are read-only: a caller that changed one in place would change every
later answer to that question.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from stores.text.embedders import Embedder, Matrix

DEFAULT_ENTRIES = 1024


class QuestionVectors:
    """``embedder``'s vector of a question, the last ``max_entries`` questions cached."""

    def __init__(self, embedder: Embedder, max_entries: int = DEFAULT_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"a question cache needs at least one entry, not {max_entries}")
        self.embedder = embedder
        self.max_entries = max_entries
        self._vectors: OrderedDict[tuple[str, str], Matrix] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._vectors)

    def vector(self, question: str) -> Matrix:
        """The question's unit vector (1-d, read-only), from the cache or the model."""
        key = (self.embedder.name, question)
        held = self._vectors.get(key)
        if held is not None:
            self._vectors.move_to_end(key)
            self.hits += 1
            return held
        self.misses += 1
        row = np.array(self.embedder.embed([question])[0], dtype=np.float32)
        row.setflags(write=False)
        self._vectors[key] = row
        if len(self._vectors) > self.max_entries:
            self._vectors.popitem(last=False)
        return row

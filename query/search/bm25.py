"""Okapi BM25 over documents given as tokens, postings in numpy arrays (issue 16 §3).

Scoring (Lucene's variant, its IDF never negative), for a query with term counts qtf:
``score(d) = sum_t qtf(t) * idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b *
len(d) / avglen))`` with ``idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))``.

Layout. A document is a *slot* (an int32): its length, its group (a file, for
`SparseIndex`) and whether it is alive live in arrays indexed by slot. Postings are in
two segments: the *base*, CSR by term id (``indptr``, slots int32, tf uint16), and the
*live* segment, term -> a growable `array.array` of (slot, tf) pairs, where every
document added since the last compaction goes (a new term gets its id when it moves
to the base). Removing a document only marks its slot dead (a
tombstone). A compaction folds the live segment into the base and drops the dead
postings, once dead + live postings pass ``compact_fraction`` of the base (and
``compact_min``): every posting is then moved a bounded number of times per change, so
its cost is amortized (measured in `tests/bench/sparse_incremental.py`). Dead slots
and the ids of vanished terms are reused after a compaction, never before (no posting
then names them).

Exactness. N and the total length are Python ints kept under add and remove; df(t)
is counted at query time as the alive postings of t (the scorer gathers their
aliveness anyway), so statistics equal a fresh build's whatever the history. The
scorer adds terms in sorted order, one numpy expression per term evaluating exactly
the float64 operations of the dict implementation, in its order (``weight * tf / (tf
+ base + per_token * len)``: elementwise IEEE operations, no reduction), and every
document holds a term's posting once (its accumulator starts at 0.0, and 0.0 + x is
x, as the dict's ``get(doc, 0.0) + x``); so each document's score is the same sum, bit
for bit, as the former dicts of dicts computed (`tests/sparse_oracle.py`,
`tests/unit/test_retrieval_sparse_arrays.py`).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["BM25", "Statistics"]

Slots = npt.NDArray[np.int32]
Scores = npt.NDArray[np.float64]

_TF16 = np.iinfo(np.uint16).max


def _grown(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` with room for ``size`` entries (capacity grown by half, amortized)."""
    if size <= len(values):
        return values
    bigger = np.zeros(max(size, len(values) * 3 // 2, 16), dtype=values.dtype)
    bigger[: len(values)] = values
    return bigger


@dataclass(frozen=True, slots=True)
class Statistics:
    """What BM25 reads of a corpus for a query: its documents, their total length and
    each query term's document frequency. Summed over several indexes (`merged`) and
    given to each one's `BM25.hits`, they score every document exactly as one index
    holding all of them would (issue 18: rankings across repositories and shards)."""

    count: int
    total_length: int
    df: Mapping[str, int]

    @classmethod
    def merged(cls, parts: Iterable[Statistics]) -> Statistics:
        count = total = 0
        df: dict[str, int] = {}
        for part in parts:
            count += part.count
            total += part.total_length
            for term, n in part.df.items():
                df[term] = df.get(term, 0) + n
        return cls(count, total, df)


class BM25:
    """Okapi BM25 over documents keyed by id; adds and removes exact.

    ``compact_fraction``, ``compact_min``: when the postings of the live segment plus
    the dead ones exceed ``max(compact_min, compact_fraction * base postings)``, the
    index compacts (tests make both tiny to compact at every step).
    """

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        compact_fraction: float = 0.25,
        compact_min: int = 8192,
    ) -> None:
        self.k1, self.b = k1, b
        self.compact_fraction, self.compact_min = compact_fraction, compact_min
        # documents, by slot
        self._slot_of: dict[str, int] = {}
        self._ids: list[str | None] = []  # None: dead or free
        self._lengths = np.zeros(0, dtype=np.int32)
        self._groups = np.zeros(0, dtype=np.int32)
        self._alive = np.zeros(0, dtype=np.bool_)
        self._widths = np.zeros(0, dtype=np.int32)  # distinct terms: its postings
        self._dead: list[int] = []  # slots removed since the last compaction
        self._free: list[int] = []  # slots no posting names, to reuse
        self._count = 0
        self._total_length = 0
        # terms, by id
        self._term_of: dict[str, int] = {}
        self._names: list[str | None] = []  # None: a free id
        self._free_terms: list[int] = []
        # base segment (CSR over term ids below len(indptr) - 1) and live segment
        self._indptr = np.zeros(1, dtype=np.int64)
        self._slots: Slots = np.zeros(0, dtype=np.int32)
        self._tfs: np.ndarray = np.zeros(0, dtype=np.uint16)
        # live: term -> (slot, tf) pairs, flat: keyed by the term itself, so that an
        # add costs a lookup and an extend per term (term ids come at compaction)
        self._live: dict[str, array[int]] = {}
        self._live_postings = 0
        self._dead_postings = 0
        self.compactions = 0  # how many so far (benchmarks, metrics)
        self._batching = False  # in `add_many`: no compaction yet

    def __len__(self) -> int:
        return self._count

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    @property
    def average_length(self) -> float:
        return self._total_length / self._count if self._count else 0.0

    def document_frequency(self, term: str) -> int:
        return sum(len(slots) for slots, _ in self._postings(term))

    def vocabulary(self) -> frozenset[str]:
        """The terms some indexed document holds."""
        indptr, alive, names = self._indptr, self._alive, self._names
        terms = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        held = np.bincount(terms[alive[self._slots]], minlength=len(names))
        base = {names[t] for t in np.flatnonzero(held).tolist()}
        live = {
            term
            for term, pairs in self._live.items()
            if alive[np.frombuffer(pairs, dtype=np.int32)[::2]].any()
        }
        return frozenset(base | live)  # type: ignore[arg-type]

    def statistics(self, tokens: Iterable[str]) -> Statistics:
        """This index's share of the statistics a query's scores read."""
        df = {term: self.document_frequency(term) for term in sorted(set(tokens))}
        return Statistics(self._count, self._total_length, {t: n for t, n in df.items() if n})

    def idf(self, term: str) -> float:
        df = self.document_frequency(term)
        return math.log(1 + (self._count - df + 0.5) / (df + 0.5))

    def add(self, doc_id: str, tokens: Iterable[str], group: int = 0) -> None:
        """Index a document; one already indexed under ``doc_id`` is replaced.
        ``group``: an int the document carries (`SparseIndex`: its file)."""
        self.remove(doc_id)
        counts = Counter(tokens)
        slot = self._place(doc_id, counts, group)
        live, get = self._live, self._live.get
        for term, tf in counts.items():
            pairs = get(term)
            if pairs is None:
                pairs = live[term] = array("i")
            pairs.extend((slot, tf))
        self._live_postings += len(counts)
        self._maybe_compact()

    def add_many(self, docs: Iterable[tuple[str, Iterable[str], int]]) -> None:
        """`add` each ``(doc_id, tokens, group)`` in turn, answering as those adds would.

        The batch's postings are gathered flat, two list extends a document instead of
        one array extend a term, and then go to the live segment if they are few, or to
        the base in one numpy pass with it if they would pass the compaction threshold
        anyway (a scan's barrier, a snapshot's files: sympy's 37,475 chunks hold 1.07 M
        postings). Documents get the slots the adds would give them on an index with no
        free slots (an empty one); on another the slots may differ, never the scores."""
        terms: list[str] = []
        tfs: list[int] = []
        slots: list[int] = []
        widths: list[int] = []
        # No compaction until the batch's postings are in: it would free the slots of
        # documents removed meanwhile (a replaced file's chunks), whose postings wait here.
        self._batching = True
        try:
            for doc_id, tokens, group in docs:
                self.remove(doc_id)
                counts = Counter(tokens)
                slots.append(self._place(doc_id, counts, group))
                widths.append(len(counts))
                terms.extend(counts)
                tfs.extend(counts.values())
        finally:
            self._batching = False
            self._take(terms, tfs, slots, widths)
        self._maybe_compact()

    def add_counted(
        self,
        docs: Iterable[tuple[str, int, int]],
        vocabulary: Sequence[str],
        starts: npt.NDArray[np.int64],
        terms: npt.NDArray[np.int32],
        tfs: npt.NDArray[np.int32],
    ) -> None:
        """`add_many` of documents whose tokens are counted already: ``(doc_id, group,
        k)`` holds the distinct terms ``vocabulary[terms[i]]``, each ``tfs[i]`` times, for
        ``i`` in ``starts[k]:starts[k + 1]``, in first-seen order (what ``Counter`` of
        its tokens holds; `stores.chunk_postings`). The index answers exactly as after
        `add_many` of the tokens (`tests/unit/test_chunk_postings.py`)."""
        bounds = starts.tolist()
        totals = np.concatenate(([0], np.cumsum(tfs, dtype=np.int64)))
        self._batching = True
        try:
            given = list(docs)  # (the caller's generator removes files' chunks: batching)
            if not self._free and len({doc[0] for doc in given}) == len(given):
                picked, slots, widths = self._place_all(given, starts, totals)
            else:
                picked, slots, widths = [], [], []
                sums = totals.tolist()
                for doc_id, group, k in given:
                    self.remove(doc_id)
                    start, end = bounds[k], bounds[k + 1]
                    length = sums[end] - sums[start]
                    slots.append(self._place_counted(doc_id, length, end - start, group))
                    widths.append(end - start)
                    picked.append(k)
        finally:
            self._batching = False
        self._take_counted(vocabulary, starts, terms, tfs, picked, slots, widths)
        self._maybe_compact()

    def _place_all(
        self,
        docs: list[tuple[str, int, int]],
        starts: npt.NDArray[np.int64],
        totals: npt.NDArray[np.int64],
    ) -> tuple[list[int], list[int], list[int]]:
        """`_place_counted` of each document in turn, in numpy: with no free slot, and
        each id once, they take the next slots in order, as one by one (sympy: 37,475
        documents placed in ~0.3 s less). Returns the chunks picked, slots and widths."""
        for doc_id, _, _ in docs:
            self.remove(doc_id)  # an earlier version: a tombstone (batching: no reuse)
        first, n = len(self._ids), len(docs)
        ks = np.fromiter((doc[2] for doc in docs), dtype=np.int64, count=n)
        groups = np.fromiter((doc[1] for doc in docs), dtype=np.int32, count=n)
        widths = starts[ks + 1] - starts[ks]
        lengths = totals[starts[ks + 1]] - totals[starts[ks]]
        end = first + n
        self._lengths = _grown(self._lengths, end)
        self._groups = _grown(self._groups, end)
        self._alive = _grown(self._alive, end)
        self._widths = _grown(self._widths, end)
        self._lengths[first:end] = lengths
        self._groups[first:end] = groups
        self._alive[first:end] = True
        self._widths[first:end] = widths
        ids = [doc[0] for doc in docs]
        self._ids.extend(ids)
        slots = list(range(first, end))
        self._slot_of.update(zip(ids, slots, strict=True))
        self._count += n
        self._total_length += int(lengths.sum())
        return ks.tolist(), slots, widths.tolist()

    def _take_counted(
        self,
        vocabulary: Sequence[str],
        starts: npt.NDArray[np.int64],
        terms: npt.NDArray[np.int32],
        tfs: npt.NDArray[np.int32],
        picked: list[int],
        slots: list[int],
        widths: list[int],
    ) -> None:
        """`_take` of counted documents: the postings of chunks ``picked`` for ``slots``."""
        if not picked or not sum(widths):
            return
        if len(picked) == len(starts) - 1:  # every chunk, in order (a snapshot's)
            mine, counts = terms, tfs
        else:
            spans = [np.arange(starts[k], starts[k + 1]) for k in picked]
            at = np.concatenate(spans)
            mine, counts = terms[at], tfs[at]
        threshold = max(self.compact_min, self.compact_fraction * len(self._slots))
        if self._live_postings + self._dead_postings + len(mine) <= threshold:
            named = [vocabulary[t] for t in mine.tolist()]
            self._take(named, counts.tolist(), slots, widths)
            return
        # Ids for new terms in first-seen order, as `_take` gives them.
        firsts = np.unique(mine, return_index=True)[1]
        term_of = self._term_of
        ids = np.full(len(vocabulary), -1, dtype=np.int32)
        for t in mine[np.sort(firsts)].tolist():
            term = vocabulary[t]
            known = term_of.get(term)
            ids[t] = self._new_term(term) if known is None else known
        self._rebuild(
            ids[mine],
            np.repeat(np.array(slots, dtype=np.int32), widths),
            counts.astype(np.int32, copy=False),
        )

    def _place_counted(self, doc_id: str, length: int, width: int, group: int) -> int:
        """`_place` of a document of ``length`` tokens, ``width`` of them distinct."""
        slot = self._new_slot()
        self._slot_of[doc_id] = slot
        self._ids[slot] = doc_id
        self._lengths[slot], self._groups[slot] = length, group
        self._alive[slot], self._widths[slot] = True, width
        self._count += 1
        self._total_length += length
        return slot

    def _take(self, terms: list[str], tfs: list[int], slots: list[int], widths: list[int]) -> None:
        """The postings of documents just placed: ``widths[i]`` (term, tf) pairs of
        ``terms`` and ``tfs`` for ``slots[i]``, in the live segment or folded in the base."""
        if not terms:
            return
        threshold = max(self.compact_min, self.compact_fraction * len(self._slots))
        if self._live_postings + self._dead_postings + len(terms) <= threshold:
            live, get, at = self._live, self._live.get, 0
            for slot, width in zip(slots, widths, strict=True):
                for term, tf in zip(terms[at : at + width], tfs[at : at + width], strict=True):
                    pairs = get(term)
                    if pairs is None:
                        pairs = live[term] = array("i")
                    pairs.extend((slot, tf))
                at += width
            self._live_postings += len(terms)
            return
        term_of = self._term_of
        for term in dict.fromkeys(terms):  # ids for new terms, in first-seen order
            if term not in term_of:
                self._new_term(term)
        self._rebuild(
            np.fromiter(map(term_of.__getitem__, terms), dtype=np.int32, count=len(terms)),
            np.repeat(np.array(slots, dtype=np.int32), widths),
            np.array(tfs, dtype=np.int32),
        )

    def _place(self, doc_id: str, counts: Counter[str], group: int) -> int:
        """A new slot holding the document (its postings are the caller's to add)."""
        return self._place_counted(doc_id, sum(counts.values()), len(counts), group)

    def remove(self, doc_id: str) -> bool:
        """Forget a document (a tombstone until the next compaction); False when it
        was not indexed."""
        slot = self._slot_of.pop(doc_id, None)
        if slot is None:
            return False
        self._ids[slot] = None
        self._alive[slot] = False
        self._dead.append(slot)
        self._dead_postings += int(self._widths[slot])
        self._count -= 1
        self._total_length -= int(self._lengths[slot])
        self._maybe_compact()
        return True

    def scores(self, tokens: Iterable[str]) -> dict[str, float]:
        """The score of every document holding at least one of the query's terms."""
        slots, scores = self.hits(tokens)
        ids = self._ids
        return {ids[s]: v for s, v in zip(slots.tolist(), scores.tolist(), strict=True)}  # type: ignore[misc]

    def hits(self, tokens: Iterable[str], stats: Statistics | None = None) -> tuple[Slots, Scores]:
        """The slots holding at least one of the query's terms (ascending) and their
        scores: `scores` as arrays, for the callers that rank in numpy. ``stats``: the
        corpus's (`Statistics.merged` over several indexes) instead of this index's."""
        if not self._count or not self._total_length:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64)
        k1 = self.k1
        n, total = (stats.count, stats.total_length) if stats else (self._count, self._total_length)
        # k1 * (1 - b + b * len / avglen) = base + per_token * len
        base, per_token = k1 * (1 - self.b), k1 * self.b / (total / n)
        size = len(self._ids)
        acc = np.zeros(size, dtype=np.float64)
        hit = np.zeros(size, dtype=np.bool_)
        lengths = self._lengths
        for term, qtf in sorted(Counter(tokens).items()):
            parts = self._postings(term)
            df = sum(len(slots) for slots, _ in parts)
            if not df:
                continue
            if stats is not None:
                df = stats.df.get(term, df)
            weight = qtf * math.log(1 + (n - df + 0.5) / (df + 0.5)) * (k1 + 1)
            for slots, counts in parts:
                tf = counts.astype(np.float64)
                acc[slots] += weight * tf / (tf + base + per_token * lengths[slots])
                hit[slots] = True
        found = np.flatnonzero(hit).astype(np.int32)
        return found, acc[found]

    def ids(self, slots: Iterable[int]) -> list[str]:
        """The ids of alive slots (as `hits` gives them)."""
        ids = self._ids
        return [ids[s] for s in slots]  # type: ignore[misc]

    def groups(self, slots: Slots) -> Slots:
        return self._groups[slots]

    def group_of(self, doc_id: str) -> int:
        return int(self._groups[self._slot_of[doc_id]])

    def _postings(self, term: str) -> list[tuple[Slots, np.ndarray]]:
        """The term's alive postings, (slots, tfs) per segment holding some."""
        parts: list[tuple[Slots, np.ndarray]] = []
        t = self._term_of.get(term)
        if t is not None:
            start, end = int(self._indptr[t]), int(self._indptr[t + 1])
            if end > start:
                parts.append((self._slots[start:end], self._tfs[start:end]))
        live = self._live.get(term)
        if live is not None:
            pairs = np.frombuffer(live, dtype=np.int32).copy()  # the buffer let go
            parts.append((pairs[::2], pairs[1::2]))
        if self._dead_postings:
            alive = self._alive
            parts = [(s[keep], f[keep]) for s, f in parts if (keep := alive[s]).any()]
        return parts

    def _new_slot(self) -> int:
        if self._free:
            return self._free.pop()
        slot = len(self._ids)
        self._ids.append(None)
        size = slot + 1
        self._lengths = _grown(self._lengths, size)
        self._groups = _grown(self._groups, size)
        self._alive = _grown(self._alive, size)
        self._widths = _grown(self._widths, size)
        return slot

    def _new_term(self, term: str) -> int:
        if self._free_terms:
            t = self._free_terms.pop()
            self._names[t] = term
        else:
            t = len(self._names)
            self._names.append(term)
        self._term_of[term] = t
        return t

    def _maybe_compact(self) -> None:
        if self._batching:
            return
        pending = self._live_postings + self._dead_postings
        if pending > max(self.compact_min, self.compact_fraction * len(self._slots)):
            self.compact()

    def compact(self) -> None:
        """Fold the live segment into the base, drop dead postings; dead slots and
        terms left without postings become free for reuse."""
        no_terms = np.zeros(0, dtype=np.int32)
        self._rebuild(no_terms, no_terms, no_terms)

    def _rebuild(self, terms: np.ndarray, slots: Slots, tfs: np.ndarray) -> None:
        """The base again, from itself, the live segment and the postings ``(terms[i],
        slots[i], tfs[i])`` (term ids), without the dead ones."""
        indptr = self._indptr
        flat, live_terms, sizes = array("i"), [], []
        term_of = self._term_of
        for term, pairs in self._live.items():
            t = term_of.get(term)
            live_terms.append(self._new_term(term) if t is None else t)
            sizes.append(len(pairs) // 2)
            flat.extend(pairs)
        moved = np.frombuffer(flat, dtype=np.int32).reshape(-1, 2)
        term_all = np.concatenate(
            (
                np.repeat(np.arange(len(indptr) - 1, dtype=np.int32), np.diff(indptr)),
                np.repeat(np.array(live_terms, dtype=np.int32), sizes),
                terms.astype(np.int32, copy=False),
            )
        )
        slot_all = np.concatenate((self._slots, moved[:, 0], slots))
        tf_all = np.concatenate((self._tfs.astype(np.int32), moved[:, 1], tfs))
        del moved  # lets go of the buffer
        keep = self._alive[slot_all]
        term_all, slot_all, tf_all = term_all[keep], slot_all[keep], tf_all[keep]
        # The base is sorted by term already and the rest is appended: timsort
        # (numpy's stable sort for int32) merges the runs.
        order = np.argsort(term_all, kind="stable")
        counts = np.bincount(term_all, minlength=len(self._names))
        self._indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self._slots = slot_all[order]
        wide = len(tf_all) and int(tf_all.max()) > _TF16
        self._tfs = tf_all[order].astype(np.uint32 if wide else np.uint16)
        self._live = {}
        self._live_postings = self._dead_postings = 0
        self.compactions += 1
        self._free.extend(self._dead)
        self._dead = []
        names = self._names
        for t in np.flatnonzero(counts == 0).tolist():
            name = names[t]
            if name is not None:
                del self._term_of[name]
                names[t] = None
                self._free_terms.append(t)

"""The graph kept current file by file, and provably equal to a fresh build.

`IncrementalGraph.change` moves the derived indexes (RepoFacts, FolderTree) to the new
file set, re-resolves exactly the files whose answers changed (the changed file, plus
every file that asked a question whose answer is now different), rebuilds the folders
above the changed paths, and returns the difference against the state as delta fields.
Because a file's part of the graph is a pure function of its facts and its recorded
answers, the result equals what a fresh build of the same files would hold.

A file re-resolved with its record unchanged (a dependent), or changed in nothing its
resolution reads but its own symbols and references (`_reads_alike`), is patched
(build.file_patch): only the questions whose answers may have changed are asked again,
and only the edges their tallies touch are diffed (issue 3). A file resolved afresh (new,
its imports changed, or after a restore) is diffed against all it owned.

After a restore of a resolved state, `warm` resolves its files a slice at a time while the
worker is idle, recording their answers and asks as a change would, so that the first
change after a restart re-resolves only what it affects (issue 16).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain

from processors.graph.answers import FileAnswers
from processors.graph.bindings import BindingsCache
from processors.graph.build import (
    file_nodes,
    file_patch,
    file_structure,
    file_subgraph,
    structure_edges,
)
from processors.graph.lookup import Key, Lookup, RepoFacts
from processors.graph.reexports import KeptBindings
from stores.deltas import GraphDelta
from stores.projections.folders import FolderTree
from stores.records import EdgeRecord, FileRecord, NodeRecord
from stores.repo_state import RepoState

EdgeKey = tuple[str, str, str]
GraphChanges = dict[str, tuple]  # type: ignore[type-arg]


@dataclass(frozen=True, slots=True)
class Warmed:
    """What one `IncrementalGraph.warm` slice did."""

    files: int  # files (and folders) it resolved
    waiting: int  # files and folders left to resolve (0: the warm-up is over)
    mismatched: tuple[str, ...] = ()  # owners the state holds otherwise: left cold


class IncrementalGraph:
    def __init__(self, repo: str) -> None:
        self.facts = RepoFacts()
        self.folders = FolderTree(repo)
        self._asked: dict[str, set[Key]] = {}  # file -> the keys its resolution asked
        self._askers: dict[Key, set[str]] = {}  # key -> the files that asked it
        self._external_refs: dict[str, int] = {}  # external node -> edges into it
        self._asks_current = True
        self._restored_resolved = False  # see `absorb`
        self._pending: dict[str, set[Key]] = {}
        self._answers: dict[str, FileAnswers] = {}  # file -> its last resolution's answers
        self._pending_answers: dict[str, FileAnswers | None] = {}
        self._pending_more: dict[str, set[Key]] = {}  # patched file -> keys it added
        self._deferred: set[str] = set()  # files of a scan not resolved yet
        self._deferred_keys: set[Key] = set()  # keys their arrival changed
        self._deferred_folders: set[str] = set()  # folders their arrival changed
        self._bindings = KeptBindings()  # other files' bindings: see reexports.py
        self._pending_binds: BindingsCache = {}
        self._cold: list[str] | None = None  # owners left to warm, the next last
        self._warmed: set[str] = set()  # files whose answers `warm` recorded
        self._warm_binds: BindingsCache = {}  # the warm-up's pass: facts hold still
        self._warm_mismatched = False
        self.resolved_files = 0  # files changes resolved or patched, in all (`warm` aside)

    @property
    def answers_current(self) -> bool:
        """Whether every file's answers are held: False after a restore (`absorb`) until
        `warm` resolved them all, or the first change, which resolves the rest once."""
        return self._asks_current

    @property
    def warmable(self) -> bool:
        """Whether `warm` has files to resolve: after a restore of a resolved state, before
        its first change, with nothing of a scan waiting for its barrier."""
        return (
            not self._asks_current
            and self._restored_resolved
            and self._cold != []
            and not (self._deferred or self._deferred_keys or self._deferred_folders)
        )

    @property
    def scan_files_waiting(self) -> int:
        """The files of a scan that arrived and wait for its barrier (`change`'s defer)."""
        return len(self._deferred)

    @property
    def state_resolved(self) -> bool:
        """Whether the state this graph keeps has every file resolved into its edges: no
        scan's file waits for its barrier (and, after a restore, the state restored was
        resolved or a change has resolved it since)."""
        return not self._deferred and (self._asks_current or self._restored_resolved)

    # -- computing a change -----------------------------------------------------------

    def change(
        self,
        state: RepoState,
        upserted: FileRecord | None,
        removed: Iterable[str],
        *,
        defer: bool = False,
    ) -> GraphChanges:
        """Apply a file change to the derived indexes and return the graph delta fields.

        ``defer`` (the files of a scan): only the file's own nodes and structure now;
        its references, and the files whose answers it changes, are resolved together
        by the next change that does not defer (the scan's barrier), once instead of
        once per file that arrives. The caller applies the returned fields to
        ``state`` and then calls ``commit``.
        """
        removed = sorted(set(removed))
        dirty: set[Key] = set()
        folders: set[str] = set()
        for path in removed:
            dirty |= self.facts.replace(path, None)
            folders.update(self.folders.remove(path))
            self._deferred.discard(path)
        # changed files whose imports, language and package are the same: their
        # previous record and the qualnames whose signatures changed
        same: dict[str, tuple[FileRecord, frozenset[str]]] = {}
        if upserted is not None:
            old = self.facts.files.get(upserted.path)
            was = self.facts.by_qualname.get(upserted.path, {})
            dirty |= self.facts.replace(upserted.path, upserted)
            if old is None:
                folders.update(self.folders.add(upserted.path))
            elif _reads_alike(old, upserted):
                now = self.facts.by_qualname[upserted.path]
                reshaped = {q for q in was.keys() | now.keys() if was.get(q) != now.get(q)}
                same[upserted.path] = (old, frozenset(reshaped))
        changed = set(removed) | ({upserted.path} if upserted is not None else set())
        if defer:
            # Folders too wait for the barrier: a folder's edges list all its files, so
            # laying it out per arriving file is quadratic in the folder's size.
            self._deferred_keys |= dirty
            self._deferred_folders |= folders
            self._cold, self._warm_binds = None, {}  # the facts moved: see `warmable`
            if upserted is not None:
                self._deferred.add(upserted.path)
            return self._resolve(
                state, set(), changed, set(), structure_only=changed - set(removed)
            )
        dirty |= self._deferred_keys
        cache = self._bindings.rebind(self.facts, dirty)
        folders |= self._deferred_folders
        affected = {p for key in dirty for p in self._askers.get(key, ())} | self._deferred
        self._deferred, self._deferred_keys, self._deferred_folders = set(), set(), set()
        if not self._asks_current and (
            not self._restored_resolved or affected or changed or folders or dirty
        ):
            # After a restore: resolve everything once, at the first change. When the
            # restored state was resolved (`absorb`), a change of nothing (the barrier of
            # a restart's scan that found no file changed) leaves it to the next: the
            # state is already what it would resolve to, and resolving sympy takes ~10 s.
            # The files `warm` resolved already have their answers and asks, as after
            # any change: those the change reaches are among ``affected``. The folders
            # are laid out again as before the warm-up (a restore from deltas may hold
            # a scan's folders unlaid; a resolved state's layout gives no difference).
            affected |= set(self.facts.files) - self._warmed
            folders |= set(self.folders.under)
            self._asks_current = True
            self._cold, self._warmed, self._warm_binds = None, set(), {}
        if upserted is not None:
            affected.add(upserted.path)
        return self._resolve(
            state, affected - set(removed), changed - same.keys(), folders, dirty, same, cache
        )

    def _resolve(
        self,
        state: RepoState,
        affected: set[str],
        changed: set[str],
        folders: set[str],
        dirty: set[Key] = frozenset(),  # type: ignore[assignment]
        same: dict[str, tuple[FileRecord, frozenset[str]]] | None = None,
        cache: BindingsCache | None = None,
        structure_only: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> GraphChanges:
        """Resolve ``affected`` (reusing the answers of unchanged files that asked no
        key in ``dirty``), lay out ``structure_only`` and ``folders``, and diff."""
        new_nodes: dict[str, NodeRecord] = {}
        new_edges: dict[EdgeKey, EdgeRecord] = {}
        patched: dict[EdgeKey, EdgeRecord | None] = {}
        node_owners: set[str] = set()  # patched files whose nodes are in new_nodes
        self._pending, self._pending_answers, self._pending_more = {}, {}, {}
        cache = {} if cache is None else cache  # the facts hold still for this pass
        self._pending_binds = cache
        for path in sorted(affected):
            lookup = Lookup(self.facts)
            record = self.facts.files[path]
            previous = None if path in changed else self._answers.get(path)
            if previous is not None and previous.tally is not None:
                old, reshaped = (same or {}).get(path, (None, frozenset()))
                renodes = file_nodes(record) if old is not None else None
                changes, kept = file_patch(
                    record, lookup, cache, previous, dirty, renodes, reshaped
                )
                patched.update(changes)
                if old is not None and reshaped:
                    patched.update(_restructured(old, record))
                if renodes is not None:
                    new_nodes.update(renodes)
                    node_owners.add(path)
                self._pending_more[path] = lookup.keys
                self._pending_answers[path] = kept
                continue
            nodes, edges, answers = file_subgraph(record, lookup, cache, previous, dirty)
            new_nodes.update(nodes)
            new_edges.update(edges)
            self._pending[path] = lookup.keys
            self._pending_answers[path] = answers
        for path in sorted(structure_only):
            nodes, edges = file_structure(self.facts.files[path])
            new_nodes.update(nodes)
            new_edges.update(edges)
            self._pending_answers[path] = None
        for path in changed - set(self.facts.files):
            self._pending[path] = set()
            self._pending_answers[path] = None
        for folder in sorted(folders):
            nodes, edges = self.folders.subgraph(folder)
            new_nodes.update(nodes)
            new_edges.update(edges)
        self.resolved_files += len(affected)
        owners = (affected - self._pending_more.keys()) | changed | {"/" + f for f in folders}
        return self._diff(state, owners, new_nodes, new_edges, patched, owners | node_owners)

    def _diff(
        self,
        state: RepoState,
        owners: set[str],
        new_nodes: dict[str, NodeRecord],
        new_edges: dict[EdgeKey, EdgeRecord],
        patched: dict[EdgeKey, EdgeRecord | None],
        node_owners: set[str],
    ) -> GraphChanges:
        """``owners``' edges are all in ``new_edges``, ``node_owners``' nodes all in
        ``new_nodes``; ``patched`` holds the only edges of other files that may differ
        (None: none now)."""
        old_nodes = {i for p in node_owners for i in state.nodes_by_owner.get(p, ())}
        old_edges = {k for p in owners for k in state.edges.owned_keys(p)}
        held = state.edges.lookup(chain(new_edges, patched))  # each source's list read once
        removed = [k for k in old_edges if k not in new_edges]
        removed += [k for k, e in patched.items() if e is None and held[k] is not None]
        upserted = [e for k, e in new_edges.items() if not _same_edge(held[k], e)]
        upserted += [e for k, e in patched.items() if e is not None and not _same_edge(held[k], e)]
        edges_removed = sorted(removed)
        edges_upserted = sorted(upserted, key=_edge_key)
        nodes_removed = sorted(i for i in old_nodes if i not in new_nodes)
        net: dict[str, int] = {}
        for key in edges_removed:
            if key[1].startswith("ext:"):
                net[key[1]] = net.get(key[1], 0) - 1
        for edge in edges_upserted:
            if edge.dst.startswith("ext:") and held[edge.key] is None:
                net[edge.dst] = net.get(edge.dst, 0) + 1
                if edge.dst not in state.nodes:
                    name = edge.dst[4:]
                    new_nodes.setdefault(
                        edge.dst, NodeRecord(id=edge.dst, kind="EXTERNAL_MODULE", name=name)
                    )
        nodes_removed += sorted(
            node
            for node, change in net.items()
            if node in state.nodes and self._external_refs.get(node, 0) + change <= 0
        )
        nodes_upserted = [n for i, n in sorted(new_nodes.items()) if state.nodes.get(i) != n]
        return {
            "nodes_upserted": tuple(nodes_upserted),
            "nodes_removed": tuple(nodes_removed),
            "edges_upserted": tuple(edges_upserted),
            "edges_removed": tuple(edges_removed),
        }

    # -- after the state applied a delta ----------------------------------------------

    def count_externals(self, state: RepoState, delta: GraphDelta) -> None:
        """Before ``state.apply(delta)``: keep the count of edges into external nodes."""
        refs = self._external_refs
        keys = [k for k in delta.edges_removed if k[1].startswith("ext:")]
        keys += [e.key for e in delta.edges_upserted if e.dst.startswith("ext:")]
        held = state.edges.lookup(keys)
        for key in delta.edges_removed:
            if key[1].startswith("ext:") and held[key] is not None:
                refs[key[1]] -= 1
        for edge in delta.edges_upserted:
            if edge.dst.startswith("ext:") and held[edge.key] is None:
                refs[edge.dst] = refs.get(edge.dst, 0) + 1
        for node in [n for n, count in refs.items() if count <= 0]:
            del refs[node]

    def commit(self) -> None:
        """Record the questions the files resolved by the last ``change`` asked."""
        for path, keys in self._pending.items():
            old = self._asked.pop(path, set())
            for key in old - keys if old else ():
                askers = self._askers.get(key)
                if askers is not None:
                    askers.discard(path)
                    if not askers:
                        del self._askers[key]
            if keys:
                self._asked[path] = keys
                for key in keys - old if old else keys:
                    self._askers.setdefault(key, set()).add(path)
        for path, keys in self._pending_more.items():
            # A patched file (build.file_patch) adds the keys of what it re-resolved:
            # it keeps the keys of answers no longer asked (a superset of what a full
            # resolution records). Safe: an extra key only brings the file into a later
            # change's ``affected``, where each answer is checked against that change's
            # dirty keys by its own keys, so no edge depends on the extras; and every
            # kept answer's keys stay recorded, so no stale answer goes unnoticed.
            # The file's next full resolution (its record changed) records exactly.
            asked = self._asked.setdefault(path, set())
            for key in keys - asked:
                self._askers.setdefault(key, set()).add(path)
            asked |= keys
        self._bindings.keep(self._pending_binds)
        self._pending_binds = {}
        for path, answers in self._pending_answers.items():
            if answers is None:
                self._answers.pop(path, None)
            else:
                self._answers[path] = answers
        self._pending, self._pending_answers, self._pending_more = {}, {}, {}

    def absorb(self, delta: GraphDelta, *, resolved: bool = False) -> None:
        """Follow a delta published earlier (a restore): files and folders, not answers.
        ``resolved``: the state it brings has every file resolved (`state_resolved` when it
        was captured), so a first change of nothing resolves nothing."""
        for path in delta.files_removed:
            if path in self.facts.files:
                self.facts.replace(path, None)
                self.folders.remove(path)
        for record in delta.files_upserted:
            if record.path not in self.facts.files:
                self.folders.add(record.path)
            self.facts.replace(record.path, record)
        self._asks_current = False  # the next change resolves every file once
        self._restored_resolved = resolved
        self._answers, self._asked, self._askers = {}, {}, {}
        self._bindings = KeptBindings()  # kept from facts the delta moved past
        self._cold, self._warmed, self._warm_binds = None, set(), {}
        self._warm_mismatched = False

    # -- resolving a restored state while idle ---------------------------------------

    def warm(
        self, state: RepoState, limit: int, until: Callable[[], bool] = lambda: False
    ) -> Warmed:
        """Resolve up to ``limit`` more of the restored state's files (then its folders),
        in path order, stopping early once ``until()`` says the slice's time is spent (at
        least one is resolved: a slice costs its budget plus one file at most), recording
        their answers and asks as a change and ``commit`` would;
        their nodes and edges are not emitted: a resolved state (`absorb`) holds them.
        Each is checked against ``state``: an owner the state holds otherwise is left to
        the first change (``mismatched``), which resolves it and every file not warmed
        yet, as after any restore. Once all are warmed with none mismatched, the answers
        are current and the first change is an ordinary one. A no-op unless `warmable`."""
        if not self.warmable:
            return Warmed(0, len(self._cold or ()))
        if self._cold is None:
            folders = ["/" + f for f in sorted(self.folders.under, reverse=True)]
            files = sorted(self.facts.files.keys() - self._warmed, reverse=True)
            self._cold = folders + files
        cold, binds = self._cold, self._warm_binds
        taken: list[str] = []
        known = set(binds)
        mismatched = []
        while cold and len(taken) < limit and not (taken and until()):
            owner = cold.pop()
            taken.append(owner)
            if owner.startswith("/"):
                nodes, edges = self.folders.subgraph(owner[1:])
                if not _holds(state, owner, nodes, edges):
                    mismatched.append(owner)
                continue
            lookup = Lookup(self.facts)
            nodes, edges, answers = file_subgraph(self.facts.files[owner], lookup, binds)
            if not _holds(state, owner, nodes, edges):
                mismatched.append(owner)
                continue
            self._pending[owner] = lookup.keys
            self._pending_answers[owner] = answers
            self._warmed.add(owner)
        self._pending_binds = {p: b for p, b in binds.items() if p not in known}
        self.commit()
        self._warm_mismatched |= bool(mismatched)
        if not cold:
            self._warm_binds = {}
            self._asks_current = not self._warm_mismatched
            if self._asks_current:
                self._warmed = set()
        return Warmed(len(taken), len(cold), tuple(mismatched))


def _holds(
    state: RepoState, owner: str, nodes: dict[str, NodeRecord], edges: dict[EdgeKey, EdgeRecord]
) -> bool:
    """Whether ``state`` holds exactly these nodes and edges of ``owner``: a resolution of
    it would change nothing (``_diff``'s comparisons)."""
    if set(state.edges.owned_keys(owner)) != edges.keys():
        return False
    held = state.edges.lookup(edges)
    if not all(_same_edge(held[key], edge) for key, edge in edges.items()):
        return False
    return set(state.nodes_by_owner.get(owner, ())) == nodes.keys() and all(
        state.nodes.get(i) == node for i, node in nodes.items()
    )


def _restructured(old: FileRecord, new: FileRecord) -> dict[EdgeKey, EdgeRecord | None]:
    """The structure edges (CONTAINS, DEFINED_BY, SIBLING) that differ between records."""
    was, now = structure_edges(old), structure_edges(new)
    return {
        key: now.get(key)
        for key in was.keys() | now.keys()
        if key not in was or key not in now or not _same_edge(was[key], now[key])
    }


def _reads_alike(old: FileRecord, new: FileRecord) -> bool:
    """Whether resolving ``new`` reads what resolving ``old`` read of its own record
    (its symbols' signatures aside, compared by the caller): then the old answers hold."""
    return (
        old.language == new.language
        and old.package == new.package
        and old.skipped == new.skipped
        and old.imports == new.imports
    )


def _edge_key(edge: EdgeRecord) -> EdgeKey:
    return (edge.src, edge.dst, edge.kind)


def _same_edge(old: EdgeRecord | None, new: EdgeRecord) -> bool:
    """Equality of two edges of one key, without pydantic's field-by-field ``__eq__``
    (a measured third of a hub deletion's diff); an edge whose call site moved (lines
    inserted above it) differs, and is upserted as a fresh build has it."""
    return (
        old is not None
        and old.weight == new.weight
        and old.confidence == new.confidence
        and old.line == new.line
    )

"""The graph kept current file by file, and provably equal to a fresh build.

`IncrementalGraph.change` moves the derived indexes (RepoFacts, FolderTree) to the new
file set, re-resolves exactly the files whose answers changed (the changed file, plus
every file that asked a question whose answer is now different), rebuilds the folders
above the changed paths, and returns the difference against the state as delta fields.
Because a file's part of the graph is a pure function of its facts and its recorded
answers, the result equals what a fresh build of the same files would hold.
"""

from __future__ import annotations

from collections.abc import Iterable

from processors.graph.answers import FileAnswers
from processors.graph.build import file_structure, file_subgraph
from processors.graph.folders import FolderTree
from processors.graph.lookup import Key, Lookup, RepoFacts
from processors.graph.resolver import BindingsCache
from stores.deltas import GraphDelta
from stores.records import EdgeRecord, FileRecord, NodeRecord
from stores.repo_state import RepoState

EdgeKey = tuple[str, str, str]
GraphChanges = dict[str, tuple]  # type: ignore[type-arg]


class IncrementalGraph:
    def __init__(self, repo: str) -> None:
        self.facts = RepoFacts()
        self.folders = FolderTree(repo)
        self._asked: dict[str, set[Key]] = {}  # file -> the keys its resolution asked
        self._askers: dict[Key, set[str]] = {}  # key -> the files that asked it
        self._external_refs: dict[str, int] = {}  # external node -> edges into it
        self._asks_current = True
        self._pending: dict[str, set[Key]] = {}
        self._answers: dict[str, FileAnswers] = {}  # file -> its last resolution's answers
        self._pending_answers: dict[str, FileAnswers | None] = {}
        self._deferred: set[str] = set()  # files of a scan not resolved yet
        self._deferred_keys: set[Key] = set()  # keys their arrival changed
        self._deferred_folders: set[str] = set()  # folders their arrival changed

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
        if upserted is not None:
            new = upserted.path not in self.facts.files
            dirty |= self.facts.replace(upserted.path, upserted)
            if new:
                folders.update(self.folders.add(upserted.path))
        changed = set(removed) | ({upserted.path} if upserted is not None else set())
        if defer:
            # Folders too wait for the barrier: a folder's edges list all its files, so
            # laying it out per arriving file is quadratic in the folder's size.
            self._deferred_keys |= dirty
            self._deferred_folders |= folders
            if upserted is not None:
                self._deferred.add(upserted.path)
            return self._resolve(
                state, set(), changed, set(), structure_only=changed - set(removed)
            )
        dirty |= self._deferred_keys
        folders |= self._deferred_folders
        affected = {p for key in dirty for p in self._askers.get(key, ())} | self._deferred
        self._deferred, self._deferred_keys, self._deferred_folders = set(), set(), set()
        if not self._asks_current:  # after a restore: resolve everything once
            affected |= set(self.facts.files)
            folders |= set(self.folders.under)
            self._asks_current = True
        if upserted is not None:
            affected.add(upserted.path)
        return self._resolve(state, affected - set(removed), changed, folders, dirty=dirty)

    def _resolve(
        self,
        state: RepoState,
        affected: set[str],
        changed: set[str],
        folders: set[str],
        structure_only: set[str] = frozenset(),  # type: ignore[assignment]
        dirty: set[Key] = frozenset(),  # type: ignore[assignment]
    ) -> GraphChanges:
        """Resolve ``affected`` (reusing the answers of unchanged files that asked no
        key in ``dirty``), lay out ``structure_only`` and ``folders``, and diff."""
        new_nodes: dict[str, NodeRecord] = {}
        new_edges: dict[EdgeKey, EdgeRecord] = {}
        self._pending, self._pending_answers = {}, {}
        cache: BindingsCache = {}  # the facts hold still for this pass
        for path in sorted(affected):
            lookup = Lookup(self.facts)
            previous = None if path in changed else self._answers.get(path)
            nodes, edges, answers = file_subgraph(
                self.facts.files[path], lookup, cache, previous, dirty
            )
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
        owners = affected | changed | {"/" + f for f in folders}
        return self._diff(state, owners, new_nodes, new_edges)

    def _diff(
        self,
        state: RepoState,
        owners: set[str],
        new_nodes: dict[str, NodeRecord],
        new_edges: dict[EdgeKey, EdgeRecord],
    ) -> GraphChanges:
        old_nodes = {n.id: n for p in owners for n in state.owned_nodes(p)}
        old_edges = {e.key: e for p in owners for e in state.owned_edges(p)}
        edges_removed = sorted(k for k in old_edges if k not in new_edges)
        edges_upserted = [
            e for k, e in sorted(new_edges.items()) if not _same_edge(old_edges.get(k), e)
        ]
        nodes_removed = sorted(i for i in old_nodes if i not in new_nodes)
        net: dict[str, int] = {}
        for key in edges_removed:
            if key[1].startswith("ext:"):
                net[key[1]] = net.get(key[1], 0) - 1
        for edge in edges_upserted:
            if edge.dst.startswith("ext:") and edge.key not in old_edges:
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
        for key in delta.edges_removed:
            if key[1].startswith("ext:") and key in state.edges:
                refs[key[1]] -= 1
        for edge in delta.edges_upserted:
            if edge.dst.startswith("ext:") and edge.key not in state.edges:
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
        for path, answers in self._pending_answers.items():
            if answers is None:
                self._answers.pop(path, None)
            else:
                self._answers[path] = answers
        self._pending, self._pending_answers = {}, {}

    def absorb(self, delta: GraphDelta) -> None:
        """Follow a delta published earlier (a restore): files and folders, not answers."""
        for path in delta.files_removed:
            if path in self.facts.files:
                self.facts.replace(path, None)
                self.folders.remove(path)
        for record in delta.files_upserted:
            if record.path not in self.facts.files:
                self.folders.add(record.path)
            self.facts.replace(record.path, record)
        self._asks_current = False  # the next change resolves every file once
        self._answers = {}


def _same_edge(old: EdgeRecord | None, new: EdgeRecord) -> bool:
    """Equality of two edges of one key, without pydantic's field-by-field ``__eq__``
    (a measured third of a hub deletion's diff)."""
    return old is not None and old.weight == new.weight and old.confidence == new.confidence

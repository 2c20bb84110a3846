"""A repository's materialized state, and the one way to change it: apply a delta.

The processors and every reader fold the same deltas with the same code, so the
state a query answers from is, by construction, the state the processors hold. That
includes the repository's lease (issue 15): a delta that carries one (a LeaseClaimed's)
makes it current and keeps the lease it fenced, with the last sequence number applied
from it, so that a worker restored from the log judges events exactly as before.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from stores.deltas import CommitRecord, GraphDelta, LeaseRecord, SourceMark
from stores.records import EdgeRecord, FileRecord, NodeRecord

RECENT_COMMITS = 200
"""How many observed commits a state keeps (a bound, not a history store)."""

FENCED_LEASES = 32
"""How many fenced leases a state remembers (to recognise their late events as replays)."""


@dataclass(frozen=True, slots=True)
class FencedLease:
    """A lease a greater claim took over, and the last sequence number applied from it."""

    lease: LeaseRecord
    last_seq: int


def owner_path(node_id: str) -> str | None:
    """What owns a node or an edge from it: the file of ``file:a.py`` and ``sym:a.py:X``;
    ``/folder`` for a folder node ``dir:folder`` (file paths never start with '/');
    nothing for external modules, which live as long as an edge points at them."""
    if node_id.startswith("file:"):
        return node_id[5:]
    if node_id.startswith("sym:"):
        return node_id[4:].split(":", 1)[0]
    if node_id.startswith("dir:"):
        return "/" + node_id[4:]
    return None


@dataclass
class RepoState:
    """A repository's materialized state: its files' records, the graph's nodes and edges
    (indexed by the file that owns them, so a file's change removes exactly its own), the
    last delta applied (``seq``), the commit the state reflects, recent commits and the
    lease. Changed only by `apply`; the worker and every query replica hold one per
    repository, folded from the same deltas."""

    repo: str
    files: dict[str, FileRecord] = field(default_factory=dict)
    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], EdgeRecord] = field(default_factory=dict)
    edges_by_owner: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)
    nodes_by_owner: dict[str, set[str]] = field(default_factory=dict)
    seq: int = 0
    source: SourceMark | None = None
    indexed_commit: str | None = None
    branch: str | None = None
    indexed_at: float | None = None
    last_event_kind: str | None = None
    scans_completed: int = 0
    commits: deque[CommitRecord] = field(default_factory=lambda: deque(maxlen=RECENT_COMMITS))
    lease: LeaseRecord | None = None
    fenced: deque[FencedLease] = field(default_factory=lambda: deque(maxlen=FENCED_LEASES))

    def apply(self, delta: GraphDelta) -> bool:
        """Apply the next delta; returns False (and changes nothing) for one already applied.

        A gap (a delta numbered past the next) is a broken log and raises: folding on
        would silently lose changes.
        """
        if delta.repo != self.repo:
            raise ValueError(f"delta of {delta.repo!r} applied to state of {self.repo!r}")
        if delta.seq <= self.seq:
            return False
        if delta.seq != self.seq + 1:
            raise ValueError(f"delta gap in {self.repo}: have {self.seq}, got {delta.seq}")
        for path in delta.files_removed:
            self.files.pop(path, None)
        for record in delta.files_upserted:
            self.files[record.path] = record
        for key in delta.edges_removed:
            self._drop_edge(key)
        for node_id in delta.nodes_removed:
            self._drop_node(node_id)
        for node in delta.nodes_upserted:
            self.nodes[node.id] = node
            owner = owner_path(node.id)
            if owner is not None:
                self.nodes_by_owner.setdefault(owner, set()).add(node.id)
        for edge in delta.edges_upserted:
            self.edges[edge.key] = edge
            owner = owner_path(edge.src)
            if owner is not None:
                self.edges_by_owner.setdefault(owner, set()).add(edge.key)
        if delta.commit is not None:
            self.commits.append(delta.commit)
        if delta.indexed_commit is not None:
            self.indexed_commit = delta.indexed_commit
        if delta.branch is not None:
            self.branch = delta.branch
        if delta.barrier == "scan_completed":
            self.scans_completed += 1
        if delta.lease is not None:
            if self.lease is not None:
                mark = self.source
                last = mark.seq if mark is not None and mark.lease == self.lease.key else 0
                self.fenced.append(FencedLease(self.lease, last))
            self.lease = delta.lease
        self.seq = delta.seq
        self.source = delta.source
        self.indexed_at = delta.applied_at
        self.last_event_kind = delta.event_kind
        return True

    def _drop_edge(self, key: tuple[str, str, str]) -> None:
        if self.edges.pop(key, None) is not None:
            owner = owner_path(key[0])
            if owner is not None:
                keys = self.edges_by_owner.get(owner)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self.edges_by_owner[owner]

    def _drop_node(self, node_id: str) -> None:
        if self.nodes.pop(node_id, None) is not None:
            owner = owner_path(node_id)
            if owner is not None:
                ids = self.nodes_by_owner.get(owner)
                if ids is not None:
                    ids.discard(node_id)
                    if not ids:
                        del self.nodes_by_owner[owner]

    def owned_edges(self, path: str) -> list[EdgeRecord]:
        return [self.edges[k] for k in sorted(self.edges_by_owner.get(path, ()))]

    def owned_nodes(self, path: str) -> list[NodeRecord]:
        return [self.nodes[i] for i in sorted(self.nodes_by_owner.get(path, ()))]

    def fingerprint(self) -> tuple[object, ...]:
        """Everything a query can see, in a canonical order: equal states, equal prints.

        The producer session that reported a file is bookkeeping, not something a query
        shows, so two runs of the same events by different sessions print the same.
        """
        return (
            self.repo,
            tuple(
                sorted((p, r.model_dump_json(exclude={"producer"})) for p, r in self.files.items())
            ),
            tuple(sorted(n.model_dump_json() for n in self.nodes.values())),
            tuple(sorted(e.model_dump_json() for e in self.edges.values())),
            self.indexed_commit,
        )

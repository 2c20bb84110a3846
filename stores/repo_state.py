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
from typing import TYPE_CHECKING

from stores.deltas import CommitRecord, GraphDelta, LeaseRecord, SourceMark
from stores.node_table import NodeTable
from stores.owners import EdgeKey, owner_path, reindex
from stores.records import EdgeRecord, FileRecord, NodeRecord

if TYPE_CHECKING:
    from stores.edge_table import EdgeTable

__all__ = ["EdgeKey", "FencedLease", "RepoState", "owner_path", "printable"]

RECENT_COMMITS = 200
"""How many observed commits a state keeps (a bound, not a history store)."""

FENCED_LEASES = 32
"""How many fenced leases a state remembers (to recognise their late events as replays)."""


@dataclass(frozen=True, slots=True)
class FencedLease:
    """A lease a greater claim took over, and the last sequence number applied from it."""

    lease: LeaseRecord
    last_seq: int


def _note(changes: dict[str, set[str]], owner: str | None, key: str) -> None:
    if owner is not None:
        changes.setdefault(owner, set()).add(key)


def _edge_table() -> EdgeTable:
    """An empty table, its module (and numpy, its columns') imported with the first state
    built, not with this module: the producers' read model holds none on a fresh start."""
    from stores.edge_table import EdgeTable

    return EdgeTable()


@dataclass
class RepoState:
    """A repository's materialized state: its files' records, the graph's nodes and edges
    (indexed by the file that owns them, so a file's change removes exactly its own; the
    edges as each node's list of those out of it, `stores.edge_table.EdgeTable`), the
    last delta applied (``seq``), the commit the state reflects, recent commits and the
    lease. The nodes are columns too (`stores.node_table.NodeTable`). Changed only by
    `apply`; the worker and every query replica hold one per
    repository, folded from the same deltas."""

    repo: str
    files: dict[str, FileRecord] = field(default_factory=dict)
    nodes: NodeTable = field(default_factory=NodeTable)
    edges: EdgeTable = field(default_factory=_edge_table)
    nodes_by_owner: dict[str, tuple[str, ...]] = field(default_factory=dict)
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

    def __post_init__(self) -> None:
        if not isinstance(self.nodes, NodeTable):  # a state built from a dict of nodes
            self.nodes = NodeTable(self.nodes.values())

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
        self.edges.apply(delta.edges_removed, delta.edges_upserted)
        gone_nodes: dict[str, set[str]] = {}
        for node_id in delta.nodes_removed:
            if self.nodes.pop(node_id, None) is not None:
                _note(gone_nodes, owner_path(node_id), node_id)
        new_nodes: dict[str, set[str]] = {}
        for node in delta.nodes_upserted:
            if node.id not in self.nodes:
                _note(new_nodes, owner_path(node.id), node.id)
            self.nodes[node.id] = node
        self.nodes.settle()
        reindex(self.nodes_by_owner, gone_nodes, new_nodes)
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

    def owned_edges(self, path: str) -> list[EdgeRecord]:
        return self.edges.owned(path)

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
                sorted(
                    (p, printable(r).model_dump_json(exclude={"producer"}))
                    for p, r in self.files.items()
                )
            ),
            tuple(sorted(n.model_dump_json() for n in self.nodes.values())),
            tuple(sorted(e.model_dump_json() for e in self.edges.values())),
            self.indexed_commit,
        )


def printable(record: FileRecord) -> FileRecord:
    """``record`` as its JSON can be written: a reader may hold its chunks, sections,
    symbols, imports and keywords packed (the read side's, `query.search.packed_chunks`,
    `packed_sections`, `packed_facts`), which print as the tuples they stand for (the
    worker's are tuples: the same record)."""
    packed = {
        name: tuple(held)
        for name in ("chunks", "sections", "symbols", "imports", "keywords")
        if not isinstance(held := getattr(record, name), tuple)
    }
    return record.model_copy(update=packed) if packed else record

"""The items of a context pack, and how kc-graph scores them.

An item is a target chunk or a node related to the targets. A related item scores

    0.4 x distance (0.5^depth) + 0.3 x edge type + 0.3 x similarity

with edge types ranked calls > tests > inheritance > type uses > imports > references
> structure (kc-graph: calls > imports > references), a name-match edge counting half
its type, and similarity whatever the caller knows of the node's match to the query
(a dense search's score, in [0, 1]; 0 when not given). An item related in several
ways keeps its best score and says every way in its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from query.search.adjacency import Adjacency
from query.search.expansion import DECAY
from query.search.pack_sources import Chunks, Gathered, Relation, Target
from query.search.pack_text import label
from stores.repo_state import RepoState

DISTANCE_WEIGHT, EDGE_WEIGHT, SIMILARITY_WEIGHT = 0.4, 0.3, 0.3
EDGE_TYPE_SCORE = {
    "CALLS": 1.0,
    "TESTS": 0.9,
    "EXTENDS": 0.8,
    "IMPLEMENTS": 0.8,
    "USES": 0.7,
    "IMPORTS": 0.6,
    "REFERENCES": 0.4,
    "CONTAINS": 0.3,
    "SIBLING": 0.3,
}
GUESS_FACTOR = {"name_match": 0.5, "test_name": 0.8}
"""A name-match edge counts half its type: it may not be the symbol meant; a test
linked by its file's name alone (named_tests.py), four fifths: a convention, not an
import."""
CONFIDENCE_WEIGHT = {"name_match": 0.3, "same_folder": 0.8, "test_name": 0.8}
"""How sure each edge confidence is (import, same_file and structural: 1)."""
ROLE_PHRASE = {
    "caller": "calls",
    "callee": "called by",
    "test": "tests",
    "import": "imported by",
    "imported_by": "imports",
    "symbol": "in",
    "sibling": "sibling of",
    "related": "reached from",
}


@dataclass(frozen=True, slots=True)
class PackLimits:
    targets: int = 5
    per_list: int = 10
    siblings: int = 20
    related: int = 20
    signature_chars: int = 160
    read_lines: int = 40


@dataclass(frozen=True, slots=True)
class PackItem:
    """A target chunk, or a node related to the targets (``roles`` says how)."""

    node: str
    key: str
    roles: tuple[str, ...]
    path: str | None
    name: str
    kind: str
    line_start: int | None
    line_end: int | None
    score: float
    reason: str = ""
    signature: str | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class Listing:
    items: tuple[PackItem, ...] = ()
    total: int = 0


@dataclass(frozen=True, slots=True)
class ReadRange:
    """The lines of a file to read first, and how many files depend on it."""

    path: str
    line_start: int
    line_end: int
    inbound: int


def read_range(state: RepoState, adj: Adjacency, item: PackItem, lines: int) -> ReadRange:
    """``lines`` lines from the item's first line (from the top for a file or module
    lines that are not a target), within the file."""
    assert item.path is not None
    start = 1
    if item.kind not in ("FILE", "MODULE") or "target" in item.roles:
        start = item.line_start or 1
    end = start + lines - 1
    record = state.files.get(item.path)
    if record is not None and record.lines:
        end = max(start, min(end, record.lines))
    return ReadRange(item.path, start, end, adj.inbound(item.path))


def target_item(adj: Adjacency, chunks: Chunks, t: Target, limits: PackLimits) -> PackItem:
    node = adj.nodes[t.node]
    if t.chunk is not None:
        c = t.chunk
        name = c.qualname or f"lines {c.line_start}-{c.line_end}"
        sig = _one_line(c.signature, limits.signature_chars) if c.signature else None
        return PackItem(
            t.node, c.id, ("target",), c.path, name, c.kind, c.line_start, c.line_end,
            t.score, "target", sig, c.text,
        )  # fmt: skip
    return PackItem(
        t.node, t.node, ("target",), node.path, _name(t.node, node.name), node.kind,
        node.line_start, node.line_end, t.score, "target",
        _one_line(chunks.signature(t.node), limits.signature_chars),
    )  # fmt: skip


def candidates(
    state: RepoState,
    adj: Adjacency,
    chunks: Chunks,
    gathered: Gathered,
    sims: Mapping[str, float],
    limits: PackLimits,
) -> dict[str, PackItem]:
    by_node: dict[str, list[Relation]] = {}
    for rels, _ in gathered.values():
        for rel in rels:
            by_node.setdefault(rel.node, []).append(rel)
    items: dict[str, PackItem] = {}
    for node_id, rels in by_node.items():
        node = adj.nodes.get(node_id)
        if node is None:
            continue
        score = max(_score(r, sims.get(node_id, 0.0)) for r in rels)
        if node.kind == "FILE" and node.path is not None:
            record = state.files.get(node.path)
            signature = _one_line(record.purpose if record else None, limits.signature_chars)
        else:
            signature = _one_line(chunks.signature(node_id), limits.signature_chars)
        items[node_id] = PackItem(
            node_id, node_id, tuple(dict.fromkeys(r.role for r in rels)), node.path,
            _name(node_id, node.name), node.kind, node.line_start, node.line_end,
            round(score, 4), _reason(rels), signature,
        )  # fmt: skip
    return items


def _score(rel: Relation, similarity: float) -> float:
    edge = EDGE_TYPE_SCORE.get(rel.kind, 0.3)
    edge *= GUESS_FACTOR.get(rel.confidence, 1.0)
    return DISTANCE_WEIGHT * DECAY**rel.depth + EDGE_WEIGHT * edge + SIMILARITY_WEIGHT * similarity


def _reason(rels: Sequence[Relation], most: int = 3) -> str:
    parts = []
    for rel in rels[:most]:
        about = _name(rel.about, label(rel.about))
        weight = f" x{rel.weight:g}" if rel.weight > 1 else ""
        phrase = f"{ROLE_PHRASE[rel.role]} {about}"
        if rel.role == "related":
            phrase += f" ({rel.kind}, depth {rel.depth})"
        elif rel.role not in ("symbol", "sibling"):  # structure needs no evidence
            phrase += f" ({rel.kind}{weight}, {rel.confidence})"
        parts.append(phrase)
    more = f"; +{len(rels) - most} more" if len(rels) > most else ""
    return "; ".join(parts) + more


def _name(node_id: str, fallback: str) -> str:
    """A symbol's qualname, a file's path, an external module's name."""
    if node_id.startswith("sym:"):
        return node_id[4:].split(":", 1)[1]
    if node_id.startswith(("file:", "ext:")):
        return node_id.split(":", 1)[1]
    return fallback


def _one_line(text: str | None, limit: int) -> str | None:
    if not text:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def pack_confidence(top_seed: float, gathered: Gathered) -> float:
    """The best seed's score (clamped to [0, 1]), discounted by how many of the pack's
    relation edges are guesses: best x (0.6 + 0.4 x mean edge certainty)."""
    edges = [
        r.confidence
        for role in ("callers", "callees", "tests", "imports", "imported_by")
        for r in gathered[role][0]
    ]
    certainty = sum(CONFIDENCE_WEIGHT.get(c, 1.0) for c in edges) / len(edges) if edges else 1.0
    return round(min(max(top_seed, 0.0), 1.0) * (0.6 + 0.4 * certainty), 2)

"""Context packs: what an agent should read about some targets, under a token budget.

vortexa's pack: the primary chunks (the targets), the test files of their files, the
files they import and that import them, the files' symbols, callers, callees, sibling
chunks (<= 20), a dependency chain, a confidence and a reasoning trace. kc-graph's
builder decides what of it fits: items are scored (pack_items.py) and a greedy fill
admits, in this order, the targets in full (a target too long for what is left shows
its signature), the header and counts, the chain, then items by score, each where it
fits (a smaller item may still fit after a larger one did not). The header and counts
go first instead when they take at most a tenth of the budget. A question's pack may
carry a map (pack_map.py): the files ranked next, a line each with their lines to read;
its share of the budget is set aside before the targets fill theirs, and it is admitted
last, naming the files no group shows. Tokens are characters / 4 and the rendered text
never exceeds the budget; every list keeps its true total beside what was shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from query.search.adjacency import Adjacency
from query.search.navigation import match_of
from query.search.pack_items import (
    Listing,
    PackItem,
    PackLimits,
    ReadRange,
    candidates,
    pack_confidence,
    read_range,
    target_item,
)
from query.search.pack_map import MAP_FILES, MAP_SHARE, Lead, lead_line, map_header
from query.search.pack_sources import (
    Chunks,
    dependency_chain,
    entry_node_id,
    gather,
    resolve_seeds,
)
from query.search.pack_text import (
    CHARS_PER_TOKEN,
    EXTERNAL_GROUP,
    block,
    chain_line,
    cost,
    counts,
    file_group,
    header,
    label,
    render,
    target_block,
    tokens,
)
from stores.projections.ids import file_id, path_of
from stores.records import ChunkRecord
from stores.repo_state import RepoState

DEFAULT_BUDGET = 8000
DEFAULT_LIMITS = PackLimits()

__all__ = ["ContextPack", "Lead", "Listing", "PackItem", "PackLimits", "ReadRange", "build_pack"]
__all__ += ["file_context", "render", "symbol_context", "tokens"]


@dataclass(frozen=True, slots=True)
class ContextPack:
    """What fitted of everything related to the targets: each list holds the items shown
    and its true total; ``files`` the file groups in the order the text shows them, with
    the lines to read first; ``tokens`` the estimate of `render`'s text."""

    title: str
    targets: tuple[PackItem, ...]
    targets_total: int
    callers: Listing
    callees: Listing
    tests: Listing
    imports: Listing
    imported_by: Listing
    symbols: Listing
    siblings: Listing
    related: Listing
    chain: tuple[str, ...]
    confidence: float
    reasoning: tuple[str, ...]
    files: tuple[ReadRange, ...]
    budget: int
    framed: bool
    """Whether the header and counts lines fit."""
    tokens: int = 0
    map: tuple[Lead, ...] = ()
    """The files ranked next for the question with their lines to read, as shown."""
    map_total: int = 0
    """How many files the map had to show: the ranked files no file group shows, at most
    `pack_map.MAP_FILES`."""


def build_pack(
    state: RepoState,
    chunks_by_path: Mapping[str, Sequence[ChunkRecord]],
    seeds: Sequence[tuple[str, float]],
    *,
    budget: int = DEFAULT_BUDGET,
    entry: str | None = None,
    similarity: Mapping[str, float] | None = None,
    title: str | None = None,
    limits: PackLimits = DEFAULT_LIMITS,
    adjacency: Adjacency | None = None,
    leads: Sequence[Lead] = (),
) -> ContextPack:
    """The pack for the seeds (node or chunk ids with their search scores, in [0, 1]).

    ``similarity`` scores other nodes' match to the query (a dense search's, in [0, 1]),
    kc-graph's third signal; ``entry`` (a node or chunk id) makes the chain the shortest
    path from it to the best target; ``adjacency`` is the state's index, when the caller
    caches it; ``leads``, the files a question ranks (best first), make the map: the first
    ``MAP_FILES`` of them that no file group shows, within a ``MAP_SHARE``-th of the
    budget.
    """
    adj = adjacency or Adjacency.of(state)
    chunks = Chunks(chunks_by_path, state)
    targets, targets_total, unknown = resolve_seeds(adj, chunks, seeds, limits.targets)
    gathered = gather(
        adj, targets, per_list=limits.per_list, siblings=limits.siblings, related=limits.related
    )
    related = candidates(state, adj, chunks, gathered, similarity or {}, limits)
    entry_node = entry_node_id(entry) if entry is not None else None
    chain = dependency_chain(adj, targets[0].node, entry_node) if targets else ()
    confidence = pack_confidence(max((t.score for t in targets), default=0.0), gathered)
    title = title or (label(targets[0].key) if targets else "no target found")
    fill = _Fill(budget * CHARS_PER_TOKEN, state, adj, limits.read_lines)
    targeted = {t.chunk.path if t.chunk is not None else path_of(t.node) for t in targets}
    to_map = [lead for lead in leads if lead.path not in targeted][:MAP_FILES]
    reserve = _map_share(to_map, fill.limit // MAP_SHARE)[1]
    fill.limit -= reserve  # the map's share, set aside while the others fill theirs
    head = [header(title, confidence), counts([(n, t, t) for n, (_, t) in gathered.items()])]
    framed = sum(map(cost, head)) <= fill.limit // 10 and fill.admit(head)
    shown_targets = [_fit_target(fill, target_item(adj, chunks, t, limits)) for t in targets]
    framed = framed or fill.admit(head)
    chain = chain if chain and fill.admit([chain_line(chain)]) else ()
    for item in sorted(related.values(), key=lambda i: (-i.score, i.node)):
        if fill.admit([block(item)], item):
            fill.shown.append(item)
    fill.limit += reserve
    to_map = [lead for lead in leads if lead.path not in fill.groups][:MAP_FILES]
    fitting, _ = _map_share(to_map, fill.limit // MAP_SHARE)  # what the groups show: not again
    shown_map = _fit_map(fill, fitting, len(to_map))
    shown = {item.node for item in fill.shown}
    listings = {
        name: Listing(tuple(related[r.node] for r in rels if r.node in shown), total)
        for name, (rels, total) in gathered.items()
    }
    kept_targets = tuple(t for t in shown_targets if t is not None)
    pack = ContextPack(
        title=title,
        targets=kept_targets,
        targets_total=targets_total,
        callers=listings["callers"],
        callees=listings["callees"],
        tests=listings["tests"],
        imports=listings["imports"],
        imported_by=listings["imported_by"],
        symbols=listings["symbols"],
        siblings=listings["siblings"],
        related=listings["related"],
        chain=chain,
        confidence=confidence,
        reasoning=_reasoning(kept_targets, fill.shown, chain, entry_node, unknown, related)
        + _map_reasoning(shown_map, len(to_map)),
        files=fill.files(),
        budget=budget,
        framed=framed,
        map=shown_map,
        map_total=len(to_map),
    )
    return _with_tokens(pack)


def symbol_context(
    state: RepoState,
    chunks_by_path: Mapping[str, Sequence[ChunkRecord]],
    name: str,
    *,
    budget: int = DEFAULT_BUDGET,
    matches: int = 3,
    path: str | None = None,
    adjacency: Adjacency | None = None,
) -> ContextPack:
    """The pack for a symbol name (``path``, a file or folder, narrows it): the symbols
    `symbol_seeds` picks, up to ``matches`` targets."""
    adj = adjacency or Adjacency.of(state)
    found = adj.named(name.rsplit(".", 1)[-1])
    seeds = symbol_seeds(found, name, path)[:matches]
    return build_pack(state, chunks_by_path, seeds, budget=budget, title=name, adjacency=adj)


EXACT, SUFFIX, SIMPLE = 1.0, 0.9, 0.5
"""Seed scores of a name's matches: the qualname itself, a qualname ending in it at a
dot (``Parser.parse`` of ``Outer.Parser.parse``), the simple name alone."""


def symbol_seeds(
    nodes: Sequence[str], name: str, path: str | None = None
) -> list[tuple[str, float]]:
    """The symbol nodes a name stands for, best first (score, then id).

    A qualified name (``BytesParser.parse``) that matches a qualname, exactly or at a
    dot, stands for those matches only: the methods of other classes that share its
    simple name are other symbols (issue 20: ``AddressHeader.parse`` came first, its
    path sorting before ``email/parser.py`` at the same score). A simple name stands for
    every symbol of that name, the exact qualnames (top-level ones) first. ``path``
    keeps the symbols of that file or of the files under that folder."""
    folder = path.strip("/") if path else None
    scores = (EXACT, SUFFIX, SIMPLE)  # by `navigation.match_of`, the answer definition uses
    scored: list[tuple[str, float]] = []
    for node in nodes:
        file = path_of(node) if node.startswith("sym:") else None
        if file is None or (folder and file != folder and not file.startswith(folder + "/")):
            continue
        scored.append((node, scores[match_of(node, name)]))
    if "." in name and any(score > SIMPLE for _, score in scored):
        scored = [(node, score) for node, score in scored if score > SIMPLE]
    return sorted(scored, key=lambda ns: (-ns[1], ns[0]))


def file_context(
    state: RepoState,
    chunks_by_path: Mapping[str, Sequence[ChunkRecord]],
    path: str,
    *,
    budget: int = DEFAULT_BUDGET,
    adjacency: Adjacency | None = None,
) -> ContextPack:
    """The pack for a file: its chunks are the targets."""
    seeds = [(file_id(path), 1.0)]
    return build_pack(state, chunks_by_path, seeds, budget=budget, title=path, adjacency=adjacency)


@dataclass
class _Fill:
    """The greedy fill: characters used of the limit, and the file groups opened so far.

    The first item admitted in a file opens its group, and that item is where the file's
    forty lines to read first start: items come in priority order (targets, then score),
    so the group line costs exactly what `render` writes."""

    limit: int
    state: RepoState
    adjacency: Adjacency
    read_lines: int
    used: int = 0
    groups: dict[str | None, ReadRange | None] = field(default_factory=dict)
    shown: list[PackItem] = field(default_factory=list)

    def admit(self, blocks: Sequence[str], item: PackItem | None = None) -> bool:
        extra = sum(map(cost, blocks))
        opens = item is not None and item.path not in self.groups
        read: ReadRange | None = None
        if item is not None and opens:
            if item.path is None:
                extra += cost(EXTERNAL_GROUP)
            else:
                read = read_range(self.state, self.adjacency, item, self.read_lines)
                extra += cost(file_group(read))
        if self.used + extra > self.limit:
            return False
        self.used += extra
        if item is not None and opens:
            self.groups[item.path] = read
        return True

    def files(self) -> tuple[ReadRange, ...]:
        return tuple(r for r in self.groups.values() if r is not None)


def _fit_target(fill: _Fill, item: PackItem) -> PackItem | None:
    if fill.admit([target_block(item)], item):
        return item
    short = replace(item, text=None, reason="target, signature only (over budget)")
    return short if fill.admit([target_block(short)], short) else None


def _map_share(leads: Sequence[Lead], share: int) -> tuple[list[Lead], int]:
    """The first leads whose lines fit ``share`` characters with the map's header (charged
    at its longest: the shown count is at most the total), and the characters they take."""
    used, fitting = cost(map_header(len(leads), len(leads))), []
    for lead in leads:
        if used + cost(lead_line(lead)) > share:
            break
        used += cost(lead_line(lead))
        fitting.append(lead)
    return fitting, used if fitting else 0


def _fit_map(fill: _Fill, leads: Sequence[Lead], total: int) -> tuple[Lead, ...]:
    """The map's lines, in order, while they fit (they do: their share was set aside)."""
    if not leads or not fill.admit([map_header(total, total)]):
        return ()
    shown: list[Lead] = []
    for lead in leads:
        if not fill.admit([lead_line(lead)]):
            break
        shown.append(lead)
    return tuple(shown)


def _reasoning(
    targets: Sequence[PackItem],
    shown: Sequence[PackItem],
    chain: tuple[str, ...],
    entry: str | None,
    unknown: Sequence[str],
    candidates: Mapping[str, PackItem],
) -> tuple[str, ...]:
    lines = [f"{t.key}: {t.reason}, seed score {t.score:.2f}" for t in targets]
    lines += [f"{label(i.node)}: {i.reason}" for i in shown]
    if chain:
        how = f"shortest path from {label(entry)}" if entry else "strongest importers"
        lines.append(f"chain: {how}, {len(chain) - 1} hops")
    if len(shown) < len(candidates):
        lines.append(f"left out over budget: {len(candidates) - len(shown)} of {len(candidates)}")
    if unknown:
        lines.append("unknown seeds: " + ", ".join(unknown[:5]))
    return tuple(lines)


def _map_reasoning(shown: Sequence[Lead], total: int) -> tuple[str, ...]:
    if not total:
        return ()
    return (f"map: {len(shown)} of {total} files ranked next, with their ranked functions",)


def _with_tokens(pack: ContextPack) -> ContextPack:
    return replace(pack, tokens=tokens(render(pack)))

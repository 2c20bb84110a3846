"""A context pack as an agent reads it: text grouped by file, targets in full.

The text is a sequence of blocks joined by newlines: a header, a line of counts (shown
of total, per list), the dependency chain, then one group per file (a ``## path`` line
with the forty lines to read first and the file's inbound degree) holding its items,
targets first with a ``[TARGET]`` mark and their lines, related symbols as one location
line and their signature; then a question's map (pack_map.py), a line per file ranked
next. The budget fill (context_pack.py) charges every block at
``len(block) + 1`` with these same functions, so what it admits is what `render`
writes, and the text never passes the budget: tokens ~ characters / 4 (kc-graph).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from query.search.pack_map import lead_line, map_header

if TYPE_CHECKING:
    from query.search.context_pack import ContextPack, Listing, PackItem, ReadRange

CHARS_PER_TOKEN = 4
LISTS = ("callers", "callees", "tests", "imports", "imported_by", "symbols", "siblings", "related")
EXTERNAL_GROUP = "\n## external modules"


def tokens(text: str) -> int:
    """The token estimate of kc-graph: characters / 4, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def cost(block: str) -> int:
    """Characters a block adds to the text, its joining newline included."""
    return len(block) + 1


def header(title: str, confidence: float) -> str:
    return f"# Context: {title} · confidence {confidence:.2f}"


def counts(shown_total: list[tuple[str, int, int]]) -> str:
    """``callers 3/12 · tests 1/1``: lists that have anything, shown of the true total."""
    parts = [f"{name} {shown}/{total}" for name, shown, total in shown_total if total]
    return "shown: " + (" · ".join(parts) if parts else "no related items")


def chain_line(chain: tuple[str, ...]) -> str:
    return "chain: " + " -> ".join(label(node) for node in chain)


def label(node: str) -> str:
    """``path:Qual.name`` for a symbol, the path for a file, the module for the rest."""
    return node.split(":", 1)[1] if node.startswith(("sym:", "file:", "ext:", "dir:")) else node


def location(item: PackItem) -> str:
    if item.path is None:
        return item.name
    if item.line_start is None:
        return item.path
    return f"{item.path}:L{item.line_start}-{item.line_end or item.line_start}"


def file_group(read: ReadRange) -> str:
    return (
        f"\n## {read.path} · read first L{read.line_start}-{read.line_end} · inbound {read.inbound}"
    )


def target_block(item: PackItem) -> str:
    head = f"[TARGET] {location(item)} {item.name} ({item.kind})"
    if item.text is not None:
        return f"{head}\n{item.text.rstrip()}"
    if item.signature:
        return f"{head} — signature only\n  {item.signature}"
    return head


def item_block(item: PackItem) -> str:
    what = "external" if item.path is None else item.kind.lower()
    head = f"{location(item)} {item.name} ({what}) — {item.reason}"
    if item.path is not None and item.line_start is not None and item.kind == "FILE":
        head = f"{location(item)} (file) — {item.reason}"
    return f"{head}\n  {item.signature}" if item.signature else head


def block(item: PackItem) -> str:
    return target_block(item) if "target" in item.roles else item_block(item)


def render(pack: ContextPack) -> str:
    """The pack's text, at most ``pack.budget`` tokens by the characters / 4 estimate."""
    blocks: list[str] = []
    if pack.framed:
        blocks.append(header(pack.title, pack.confidence))
        blocks.append(counts(shown_and_totals(pack)))
    if pack.chain:
        blocks.append(chain_line(pack.chain))
    groups: dict[str | None, list[PackItem]] = {}
    seen: set[str] = set()
    for item in (*pack.targets, *(i for listing in _listings(pack) for i in listing.items)):
        if item.key not in seen:
            seen.add(item.key)
            groups.setdefault(item.path, []).append(item)
    for read in pack.files:
        blocks.append(file_group(read))
        members = groups.get(read.path, [])
        members.sort(key=lambda i: ("target" not in i.roles, i.line_start or 0, i.key))
        blocks.extend(block(i) for i in members)
    if pack.map:
        blocks.append(map_header(len(pack.map), pack.map_total))
        blocks.extend(lead_line(lead) for lead in pack.map)
    if None in groups:
        blocks.append(EXTERNAL_GROUP)
        blocks.extend(block(i) for i in sorted(groups[None], key=lambda i: i.key))
    return "\n".join(blocks)


def shown_and_totals(pack: ContextPack) -> list[tuple[str, int, int]]:
    return [
        (name, len(listing.items), listing.total)
        for name, listing in zip(LISTS, _listings(pack), strict=True)
    ]


def _listings(pack: ContextPack) -> tuple[Listing, ...]:
    return tuple(getattr(pack, name) for name in LISTS)

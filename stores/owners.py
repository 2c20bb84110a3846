"""What owns a node or an edge, and the owner indexes a state keeps (numpy-free, so that
a process that never holds a repository's edges imports no numpy: the producers' read
model, issue 21)."""

from __future__ import annotations

EdgeKey = tuple[str, str, str]


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


def reindex(
    index: dict[str, tuple[str, ...]], gone: dict[str, set[str]], new: dict[str, set[str]]
) -> None:
    """Each touched owner's entries rebuilt once (a tuple: 8 bytes an entry where a set
    costs ~45); new ones go last, sorted, so the index does not depend on a set's order."""
    for owner in gone.keys() | new.keys():
        dropped = gone.get(owner, ())
        kept = [k for k in index.get(owner, ()) if k not in dropped]
        kept.extend(sorted(new.get(owner, ())))
        if kept:
            index[owner] = tuple(kept)
        else:
            index.pop(owner, None)

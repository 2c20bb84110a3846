"""Other files' import bindings, kept between changes to tell which names changed.

Resolution reads another file's bindings to follow re-exports (``from .x import A`` in a
package's ``__init__``) and the bases a class names there; an answer records each name it
read as ("b", "path#name") ('*': the wildcard imports), not every key computing them asked
(a package ``__init__`` asks hundreds). `KeptBindings` keeps the bindings the last pass
read and, indexed, the keys computing them asked: a change recomputes those its dirty keys
reach and makes dirty the ("b", ...) keys of the names now bound differently (issue 3: a
hub's deletion re-resolves the answers that read its names, not all that passed by).
"""

from __future__ import annotations

from processors.graph.answers import changed_names
from processors.graph.bindings import BindingsCache, file_bindings
from processors.graph.lookup import Key, Lookup, RepoFacts


class KeptBindings:
    def __init__(self) -> None:
        self._kept: BindingsCache = {}
        self._readers: dict[Key, set[str]] = {}  # key -> files whose bindings asked it

    def rebind(self, facts: RepoFacts, dirty: set[Key]) -> BindingsCache:
        """Recompute the kept bindings that asked a ``dirty`` key, add to ``dirty`` the
        ("b", "path#name") keys of the names they now bind differently, and return them
        (a pass's cache: what its answers read). Exact: an answer read a binding kept by
        its pass; every change since to a key computing it asked recomputed it and
        compared, so what an answer read has changed iff its ("b", ...) key was dirty."""
        cache: BindingsCache = {}
        reached = {p for key in dirty for p in self._readers.get(key, ())}
        for path in sorted(reached):
            old = self._kept[path]
            new, redone = file_bindings(path, Lookup(facts), old, dirty)
            cache[path] = new
            for name in changed_names(old.binds, new.binds, redone):
                dirty.add(("b", f"{path}#{name}"))
        return cache

    def keep(self, cache: BindingsCache) -> None:
        """After a pass: keep what its answers read, and index what computing it asked."""
        for path, binds in cache.items():
            kept = self._kept.get(path)
            was = kept.keys if kept is not None else frozenset()
            for key in was - binds.keys:
                readers = self._readers[key]
                readers.discard(path)
                if not readers:
                    del self._readers[key]
            for key in binds.keys - was:
                self._readers.setdefault(key, set()).add(path)
            self._kept[path] = binds

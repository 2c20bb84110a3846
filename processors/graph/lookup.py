"""What resolution may ask about a repository, and a record of what it asked.

`RepoFacts` keeps indexes derived from the files (folder listings, definitions by name,
packages, configuration files), updated file by file. Resolution reads them only
through a `Lookup`, which records every question as a key. A file's edges are a pure
function of its own facts and the answers to its questions, so when a change alters
the answer to a key, re-resolving exactly the files that asked it keeps the graph equal
to a fresh build (`RepoFacts.replace` returns those changed keys).

Keys: ("f", path) is the file there and in which language; ("d", folder) which files
the folder holds; ("q", "path#qualname") the signature of one symbol, if defined
(fine-grained on purpose: adding a method to a hub file re-resolves only the files
that looked that very name up); ("i", path) the imports;
("n", name) who defines a name; ("p", package) the files declaring a package;
("c", kind) the configuration files of a kind and their aliases; ("y", stem) the file a
Python module at that path stem is (one question instead of a probe per suffix);
("b", "path#name") what another file's imports bind a name to ('*': its wildcards),
made dirty by IncrementalGraph, which keeps those bindings and what they asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from stores.projections.ids import folder_of
from stores.records import CONFIG_LANGUAGES, Alias, FileRecord, ImportRecord, SymbolRecord

Key = tuple[str, str]

NAME_MATCH_LIMIT = 3
"""A name defined in more places than this is ambiguous: no name-only edge is drawn."""


@dataclass(frozen=True, slots=True)
class Sig:
    """What resolution may read of a symbol (line numbers are not among it)."""

    qualname: str
    name: str
    kind: str
    parent: str | None
    exported: bool
    bases: tuple[str, ...]
    implements: tuple[str, ...]
    value_type: str | None  # `x = Name(...)` at module level: Name, as written


def role_names(record: FileRecord) -> list[tuple[str, SymbolRecord]]:
    """Each symbol's name with its role: ``member:run`` for a method (reached through a
    receiver), ``local:run`` for a function or variable inside a function (never
    reachable from another file), ``top:run`` otherwise. A bare call never means a
    method, and ``x.run()`` never a module-level function."""
    kinds = {s.qualname: s.kind for s in record.symbols}
    named = []
    for sym in record.symbols:
        if sym.kind == "METHOD":
            role = "member"
        elif kinds.get(sym.parent or "") in ("FUNCTION", "METHOD"):
            role = "local"
        else:
            role = "top"
        named.append((f"{role}:{sym.name}", sym))
    return named


_PY_FORMS = (("/__init__.py", 1), ("/__init__.pyi", 3), (".py", 0), (".pyi", 2))


def python_stems(path: str) -> list[tuple[str, int]]:
    """The module path stems a file answers for, each with its rank (lower wins):
    ``a/b.py`` is stem ``a/b``; ``a/__init__.py`` is stem ``a`` (and ``a/__init__``)."""
    found = []
    for suffix, rank in _PY_FORMS:
        whole = suffix.lstrip("/")
        if path == whole:
            found.append(("", rank))
        elif path.endswith(suffix):
            found.append((path[: -len(suffix)], rank))
    return found


def signatures(record: FileRecord) -> tuple[Sig, ...]:
    return tuple(
        Sig(s.qualname, s.name, s.kind, s.parent, s.exported, s.bases, s.implements, s.value_type)
        for s in record.symbols
    )


class RepoFacts:
    def __init__(self) -> None:
        self.files: dict[str, FileRecord] = {}
        self.sigs: dict[str, tuple[Sig, ...]] = {}
        self.by_qualname: dict[str, dict[str, Sig]] = {}
        self._listings: dict[str, tuple[str, ...]] = {}
        self.py_stems: dict[str, dict[int, str]] = {}  # stem -> rank -> path
        self.folders: dict[str, set[str]] = {}
        self.by_name: dict[str, set[tuple[str, str]]] = {}  # "role:name" -> definitions
        self.packages: dict[str, set[str]] = {}
        self.configs: dict[str, set[str]] = {}

    # -- answers --------------------------------------------------------------------

    def language(self, path: str) -> str | bool | None:
        """False when there is no such file; its language (None if unparsed) otherwise."""
        record = self.files.get(path)
        return False if record is None else record.language

    def symbol(self, path: str, qualname: str) -> Sig | None:
        return self.by_qualname.get(path, {}).get(qualname)

    def python_file(self, stem: str) -> str | None:
        ranks = self.py_stems.get(stem)
        return ranks[min(ranks)] if ranks else None

    def listing(self, folder: str) -> tuple[str, ...]:
        """The files directly in a folder, sorted (cached until the folder changes)."""
        cached = self._listings.get(folder)
        if cached is None:
            cached = self._listings[folder] = tuple(sorted(self.folders.get(folder, ())))
        return cached

    def definers(self, name: str) -> tuple[tuple[str, str], ...] | None:
        """(path, qualname) of every definition of ``role:name``; None when ambiguous."""
        found = self.by_name.get(name, ())
        return tuple(sorted(found)) if len(found) <= NAME_MATCH_LIMIT else None

    def config_aliases(self, kind: str) -> tuple[tuple[str, tuple[Alias, ...]], ...]:
        return tuple((p, self.files[p].aliases) for p in sorted(self.configs.get(kind, ())))

    def answer(self, key: Key) -> object:
        kind, arg = key
        if kind == "f":
            return self.language(arg)
        if kind == "d":
            return self.listing(arg)
        if kind == "q":
            path, qualname = arg.split("#", 1)
            return self.symbol(path, qualname)
        if kind == "i":
            record = self.files.get(arg)
            return record.imports if record is not None else ()
        if kind == "n":
            return self.definers(arg)
        if kind == "y":
            return self.python_file(arg)
        if kind == "p":
            return tuple(sorted(self.packages.get(arg, ())))
        if kind == "c":
            return self.config_aliases(arg)
        raise KeyError(key)

    # -- changes --------------------------------------------------------------------

    def replace(self, path: str, new: FileRecord | None) -> set[Key]:
        """Put ``new`` (None: remove) at ``path``; return the keys whose answers changed."""
        old = self.files.get(path)
        keys = self._keys_touched(path, old, new)
        before = {key: self.answer(key) for key in keys}
        if old is not None:
            self._remove(path, old)
        if new is not None:
            self._add(new)
        return {key for key in keys if self.answer(key) != before[key]}

    def _keys_touched(self, path: str, old: FileRecord | None, new: FileRecord | None) -> set[Key]:
        keys: set[Key] = {("f", path), ("d", folder_of(path)), ("i", path)}
        keys.update(("y", stem) for stem, _ in python_stems(path))
        for record in (old, new):
            if record is None:
                continue
            keys.update(("n", name) for name, _ in role_names(record))
            keys.update(("q", f"{path}#{s.qualname}") for s in record.symbols)
            if record.package:
                keys.add(("p", record.package))
            if record.language in CONFIG_LANGUAGES:
                keys.add(("c", record.language))
        return keys

    def _add(self, record: FileRecord) -> None:
        path = record.path
        self.files[path] = record
        self.sigs[path] = signatures(record)
        by_qualname: dict[str, Sig] = {}
        for sig in self.sigs[path]:
            by_qualname.setdefault(sig.qualname, sig)  # the first of duplicates, as a build
        self.by_qualname[path] = by_qualname
        self.folders.setdefault(folder_of(path), set()).add(path)
        self._listings.pop(folder_of(path), None)
        for stem, rank in python_stems(path):
            self.py_stems.setdefault(stem, {})[rank] = path
        for name, sym in role_names(record):
            self.by_name.setdefault(name, set()).add((path, sym.qualname))
        if record.package and record.language == "java":
            self.packages.setdefault(record.package, set()).add(path)
        if record.language in CONFIG_LANGUAGES:
            self.configs.setdefault(record.language, set()).add(path)

    def _remove(self, path: str, record: FileRecord) -> None:
        del self.files[path]
        self.sigs.pop(path, None)
        self.by_qualname.pop(path, None)
        _discard(self.folders, folder_of(path), path)
        self._listings.pop(folder_of(path), None)
        for stem, rank in python_stems(path):
            ranks = self.py_stems.get(stem)
            if ranks is not None:
                ranks.pop(rank, None)
                if not ranks:
                    del self.py_stems[stem]
        for name, sym in role_names(record):
            _discard(self.by_name, name, (path, sym.qualname))
        if record.package:
            _discard(self.packages, record.package, path)
        if record.language in CONFIG_LANGUAGES:
            _discard(self.configs, record.language, path)


def _discard(index: dict, key: object, value: object) -> None:  # type: ignore[type-arg]
    values = index.get(key)
    if values is not None:
        values.discard(value)
        if not values:
            del index[key]


class Lookup:
    """The questions one file's resolution asks, answered and remembered."""

    def __init__(self, facts: RepoFacts) -> None:
        self._facts = facts
        self.keys: set[Key] = set()

    def language(self, path: str) -> str | bool | None:
        self.keys.add(("f", path))
        return self._facts.language(path)

    def fork(self) -> Lookup:
        """A lookup over the same facts that records its own keys (for a cached answer
        whose keys are then added to every file that uses it)."""
        return Lookup(self._facts)

    def exists(self, path: str) -> bool:
        return self.language(path) is not False

    def first_existing(self, candidates: Iterable[str], skip: str = "") -> str | None:
        for candidate in candidates:
            if candidate != skip and self.exists(candidate):
                return candidate
        return None

    def folder(self, path: str) -> tuple[str, ...]:
        self.keys.add(("d", path))
        return self._facts.listing(path)

    def python_file(self, stem: str) -> str | None:
        self.keys.add(("y", stem))
        return self._facts.python_file(stem)

    def symbol(self, path: str, qualname: str) -> Sig | None:
        self.keys.add(("q", f"{path}#{qualname}"))
        return self._facts.symbol(path, qualname)

    def imports(self, path: str) -> tuple[ImportRecord, ...]:
        self.keys.add(("i", path))
        record = self._facts.files.get(path)
        return record.imports if record is not None else ()

    def bound_in(self, path: str, name: str) -> None:
        """What another file's imports bind ``name`` to ('*': its wildcard imports) was
        read (computed with a ``fork``: see IncrementalGraph)."""
        self.keys.add(("b", f"{path}#{name}"))

    def definers(self, name: str) -> tuple[tuple[str, str], ...] | None:
        self.keys.add(("n", name))
        return self._facts.definers(name)

    def package(self, name: str) -> tuple[str, ...]:
        self.keys.add(("p", name))
        return tuple(sorted(self._facts.packages.get(name, ())))

    def configs(self, kind: str) -> tuple[tuple[str, tuple[Alias, ...]], ...]:
        self.keys.add(("c", kind))
        return self._facts.config_aliases(kind)

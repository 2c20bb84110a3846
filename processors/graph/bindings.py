"""What a file's imports bind: local names to modules or to members of modules.

``bindings(path, language, imports, lookup)`` turns one file's import records into the
modules its IMPORTS edges point at and the names its references can be resolved
through. Per language (modules.py says where a module lives):

- Python: ``import a.b`` binds ``a``; ``import a.b as x`` binds ``x`` to ``a.b``;
  ``from m import n`` binds ``n`` to submodule ``m.n`` when that file exists, else to
  member ``n`` of ``m``; ``*`` makes ``m`` a wildcard module.
- JS/TS: a namespace or ``require`` binding names the module; named and default
  imports name members (``default`` for the default export).
- Go: the package name (or alias) binds the package's folder; ``.`` is a wildcard.
- Java: ``import a.b.C`` binds ``C`` to the class's file; ``a.b.*`` is a wildcard of
  the package; static imports bind members of the class.
- Rust: ``use`` paths bind modules (``mod x;`` too) or their items; ``*`` globs.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field

from processors.graph import modules as m
from processors.graph.lookup import Key, Lookup
from stores.records import ImportRecord


@dataclass(frozen=True, slots=True)
class Binding:
    module: m.Module
    member: str | None = None  # a qualname inside the module's files; None: the module
    stems: tuple[str, ...] = ()  # Python: where the module may live, for submodules


@dataclass
class Bindings:
    names: dict[str, Binding] = field(default_factory=dict)
    wildcards: list[m.Module] = field(default_factory=list)
    targets: list[m.Module] = field(default_factory=list)  # what each import points at

    def bind(self, local: str, binding: Binding) -> None:
        self.names.setdefault(local, binding)  # the first binding of a name wins


def bindings(
    path: str, language: str | None, imports: tuple[ImportRecord, ...], lookup: Lookup
) -> Bindings:
    found = Bindings()
    binder = _BINDERS.get(language or "")
    if binder is not None:
        for imp in imports:
            binder(path, imp, lookup, found)
    return found


@dataclass(frozen=True, slots=True)
class ImportBinding:
    """What one import binds alone, and the lookup keys that took: a change redoes
    only the imports whose keys it reaches (a hub's deletion, one import of each
    dependent), and the file's bindings are these laid over each other in order."""

    keys: frozenset[Key]
    part: Bindings


def bind_imports(
    path: str,
    language: str | None,
    imports: tuple[ImportRecord, ...],
    lookup: Lookup,
    previous: tuple[ImportBinding, ...] = (),
    dirty: Set[Key] = frozenset(),
) -> tuple[Bindings, tuple[ImportBinding, ...], set[str]]:
    """``bindings``, import by import; ``previous``: the same imports' parts, of which
    those that asked no ``dirty`` key are reused. Every part's keys go to ``lookup``.
    Also the names the parts done again bind, before or now: no other name's binding
    can differ from the previous parts' (the first binding of a name wins)."""
    found = Bindings()
    binder = _BINDERS.get(language or "")
    if binder is None:
        return found, (), set()
    parts = []
    redone: set[str] = set()
    for i, imp in enumerate(imports):
        done = previous[i] if i < len(previous) else None
        if done is None or not dirty.isdisjoint(done.keys):
            if done is not None:
                redone.update(done.part.names)
            fork = lookup.fork()
            part = Bindings()
            binder(path, imp, fork, part)
            done = ImportBinding(frozenset(fork.keys), part)
            redone.update(part.names)
        parts.append(done)
        lookup.keys |= done.keys
        found.targets += done.part.targets
        found.wildcards += done.part.wildcards
        for local, binding in done.part.names.items():
            found.bind(local, binding)
    return found, tuple(parts), redone


def _python(path: str, imp: ImportRecord, lookup: Lookup, out: Bindings) -> None:
    stems = m.python_stems(path, imp)
    module = m.python_module(stems, lookup, path)
    external = None if imp.level else m.Module(external=imp.module.split(".", 1)[0])
    if not imp.names:
        out.targets.append(module if module.internal else external or m.NOWHERE)
        top = imp.module.split(".", 1)[0]
        if imp.alias and imp.alias != top:  # import a.b as x
            out.bind(
                imp.alias,
                Binding(module if module.internal else external or m.NOWHERE, stems=stems),
            )
        else:  # import a.b binds a
            top_stems = m.python_stems(path, imp.model_copy(update={"module": top}))
            top_module = m.python_module(top_stems, lookup, path)
            out.bind(
                top,
                Binding(
                    top_module if top_module.internal else external or m.NOWHERE, stems=top_stems
                ),
            )
        return
    for local, name in imp.bindings():
        if name == "*":
            out.wildcards.append(module)
            out.targets.append(module if module.internal else external or m.NOWHERE)
            continue
        sub = m.python_submodule(stems, name, lookup, path)
        if sub.internal:
            out.targets.append(sub)
            out.bind(local, Binding(sub, stems=tuple(f"{s}/{name}" if s else name for s in stems)))
        else:
            out.targets.append(module if module.internal else external or m.NOWHERE)
            out.bind(local, Binding(module if module.internal else external or m.NOWHERE, name))


def _js(path: str, imp: ImportRecord, lookup: Lookup, out: Bindings) -> None:
    module = m.js_module(path, imp.module, lookup)
    out.targets.append(module)
    if imp.alias:
        out.bind(imp.alias, Binding(module))
    for local, name in imp.bindings():
        if name == "*":
            if not imp.alias:
                out.wildcards.append(module)  # export * from: a re-export
            continue
        out.bind(local, Binding(module, name))


def _go(path: str, imp: ImportRecord, lookup: Lookup, out: Bindings) -> None:
    module = m.go_module(path, imp.module, lookup)
    out.targets.append(module)
    alias = imp.alias or imp.module.rsplit("/", 1)[-1]
    if alias == ".":
        out.wildcards.append(module)
    elif alias != "_":
        out.bind(alias, Binding(module))


def _java(path: str, imp: ImportRecord, lookup: Lookup, out: Bindings) -> None:
    for local, name in imp.bindings() or ((imp.module.rsplit(".", 1)[-1], ""),):
        if name == "*":
            files = lookup.package(imp.module)
            module = m.Module(files=files) if files else m.Module(external=imp.module)
            out.wildcards.append(module)
            out.targets.append(module)
            continue
        package, _, cls = imp.module.rpartition(".")
        if name and lookup.package(imp.module):  # import a.b.C: module is the package
            module = m.java_class(imp.module, name, lookup)
            member = name
        else:  # import static a.b.C.m: module is the class
            module = m.java_class(package, cls, lookup)
            member = f"{cls}.{name}" if name else cls
        if not module.internal:
            module = m.Module(external=imp.module)
        out.targets.append(module)
        out.bind(local, Binding(module, member))


def _rust(path: str, imp: ImportRecord, lookup: Lookup, out: Bindings) -> None:
    segments = imp.module.split("::")
    module = m.rust_module(path, segments, lookup)
    out.targets.append(module)
    if not imp.names:
        out.bind(imp.alias or segments[-1], Binding(module))
        return
    for local, name in imp.bindings():
        if name == "*":
            out.wildcards.append(module)
        elif name == "self":
            out.bind(local if local != "self" else segments[-1], Binding(module))
        else:
            sub = m.rust_child(module.key, [name], lookup) if module.key is not None else m.NOWHERE
            out.bind(local, Binding(sub) if sub.internal else Binding(module, name))


_BINDERS = {
    "python": _python,
    "javascript": _js,
    "typescript": _js,
    "tsx": _js,
    "go": _go,
    "java": _java,
    "rust": _rust,
}


@dataclass(frozen=True, slots=True)
class FileBindings:
    """Another file's bindings, as resolution reads them (re-exports, bases written
    there): computed once per pass, kept between passes to tell which names a change
    binds differently (IncrementalGraph)."""

    binds: Bindings
    parts: tuple[ImportBinding, ...]
    keys: frozenset[Key]  # what computing them asked


BindingsCache = dict[str, FileBindings]


def file_bindings(
    path: str, lookup: Lookup, previous: FileBindings | None = None, dirty: Set[Key] = frozenset()
) -> tuple[FileBindings, set[str] | None]:
    """The bindings of the file at ``path`` now, with the keys asked recorded apart;
    and the names that may be bound differently than in ``previous`` (None: any)."""
    fork = lookup.fork()
    language = fork.language(path)
    lang = language if isinstance(language, str) else None
    alike = ("f", path) not in dirty and ("i", path) not in dirty
    done = previous.parts if previous is not None and alike else ()
    binds, parts, redone = bind_imports(path, lang, fork.imports(path), fork, done, dirty)
    return FileBindings(binds, parts, frozenset(fork.keys)), redone if done else None

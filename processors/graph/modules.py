"""Where an import points, per language: the files of the module, or an external name.

Every answer is computed through a Lookup, so the files an import resolves to are a
recorded function of the repository's current files and configuration.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from processors.graph.lookup import Lookup
from stores.records import ImportRecord

PY_SOURCE_ROOTS = ("", "src/", "lib/")
JS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")
JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
RUST_ROOT_FILES = ("lib.rs", "main.rs", "mod.rs")


@dataclass(frozen=True, slots=True)
class Module:
    """A resolved module: its files (Go packages have several), or an external name.

    ``key`` identifies it for the language's submodule rule (a Python path stem, a Go
    folder, a Rust module folder); None when the module has no submodules here.
    """

    files: tuple[str, ...] = ()
    external: str | None = None
    key: str | None = None

    @property
    def internal(self) -> bool:
        return bool(self.files)


NOWHERE = Module()


def _norm(path: str) -> str:
    normed = posixpath.normpath(path)
    return "" if normed == "." else normed


# -- Python ---------------------------------------------------------------------------


def python_stems(importer: str, imp: ImportRecord) -> tuple[str, ...]:
    """Path stems the module may live at, in priority order."""
    if imp.level:
        package = posixpath.dirname(importer)
        for _ in range(imp.level - 1):
            package = posixpath.dirname(package)
        return (_norm(posixpath.join(package, imp.module.replace(".", "/"))),)
    base = imp.module.replace(".", "/")
    return tuple(f"{root}{base}" for root in PY_SOURCE_ROOTS)


def python_module(stems: tuple[str, ...], lookup: Lookup, importer: str) -> Module:
    for stem in stems:
        # The importer itself counts: a module may import its own names (sympy does).
        hit = lookup.python_file(stem)
        if hit is not None:
            return Module(files=(hit,), key=stem)
    return NOWHERE


def python_submodule(stems: tuple[str, ...], name: str, lookup: Lookup, importer: str) -> Module:
    """Module ``name`` under the package at ``stems`` (a namespace package needs no
    ``__init__``, so the stems are tried, not only a resolved package)."""
    return python_module(tuple(f"{s}/{name}" if s else name for s in stems), lookup, importer)


# -- JavaScript / TypeScript ------------------------------------------------------------


def _js_file(base: str, lookup: Lookup, importer: str) -> str | None:
    candidates = [base, *(base + ext for ext in JS_EXTENSIONS)]
    if base.endswith((".js", ".jsx", ".mjs", ".cjs")):  # TS sources import their output name
        stem = base.rsplit(".", 1)[0]
        candidates += [stem + ".ts", stem + ".tsx"]
    candidates += [f"{base}/index{ext}" for ext in JS_EXTENSIONS]
    return lookup.first_existing(candidates, skip=importer)


def js_package_name(spec: str) -> str:
    parts = spec.split("/")
    return "/".join(parts[:2]) if spec.startswith("@") and len(parts) > 1 else parts[0]


def js_module(importer: str, spec: str, lookup: Lookup) -> Module:
    if spec.startswith("."):
        base = _norm(posixpath.join(posixpath.dirname(importer), spec))
        hit = _js_file(base, lookup, importer)
        return Module(files=(hit,)) if hit else NOWHERE
    config = _nearest(importer, lookup.configs("tsconfig"))
    if config is not None:
        for alias in sorted(config, key=lambda a: -len(a.prefix)):  # the longest prefix first
            if alias.prefix and not spec.startswith(alias.prefix):
                continue
            target = (
                alias.target + spec[len(alias.prefix) :]
                if alias.prefix
                else (f"{alias.target}/{spec}" if alias.target else spec)
            )
            hit = _js_file(_norm(target), lookup, importer)
            if hit:
                return Module(files=(hit,))
    return Module(external=js_package_name(spec))


def _nearest(importer: str, configs: tuple[tuple[str, tuple], ...]) -> tuple | None:  # type: ignore[type-arg]
    """The aliases of the configuration file in the importer's closest ancestor folder."""
    best: tuple[int, tuple] | None = None  # type: ignore[type-arg]
    for path, aliases in configs:
        folder = posixpath.dirname(path)
        if folder == "" or importer.startswith(folder + "/"):
            depth = folder.count("/") + (1 if folder else 0)
            if best is None or depth > best[0]:
                best = (depth, aliases)
    return best[1] if best is not None else None


# -- Go ---------------------------------------------------------------------------------


def go_module(importer: str, path: str, lookup: Lookup) -> Module:
    """An import path inside the repository's module is the folder of that package."""
    for _config, aliases in lookup.configs("go-module"):
        for alias in aliases:
            if path == alias.prefix or path.startswith(alias.prefix + "/"):
                folder = _norm(posixpath.join(alias.target, path[len(alias.prefix) :].lstrip("/")))
                files = tuple(f for f in lookup.folder(folder) if f.endswith(".go"))
                return Module(files=files, key=folder) if files else NOWHERE
    return Module(external=path)


def go_package_files(importer: str, lookup: Lookup) -> tuple[str, ...]:
    """The other files of the importer's own package (its folder)."""
    folder = posixpath.dirname(importer)
    return tuple(f for f in lookup.folder(folder) if f.endswith(".go") and f != importer)


# -- Java -------------------------------------------------------------------------------


def java_class(package: str, name: str, lookup: Lookup) -> Module:
    """The file of class ``name`` in ``package``: the one named after it, else a definer."""
    files = lookup.package(package)
    named = [f for f in files if posixpath.basename(f) == f"{name}.java"]
    if named:
        return Module(files=(named[0],))
    for f in files:
        if lookup.symbol(f, name) is not None:
            return Module(files=(f,))
    return NOWHERE


# -- Rust -------------------------------------------------------------------------------


def rust_module_dir(path: str) -> str:
    """The folder a file's child modules live in: foo.rs -> foo/, mod.rs/lib.rs -> its folder."""
    folder, name = posixpath.split(path)
    if name in RUST_ROOT_FILES:
        return folder
    return _norm(posixpath.join(folder, name.removesuffix(".rs")))


def rust_crate_root(importer: str, lookup: Lookup, crate: str = "crate") -> str | None:
    best: tuple[int, str] | None = None
    for path, aliases in lookup.configs("cargo"):
        folder = posixpath.dirname(path)
        for alias in aliases:
            if alias.prefix != crate:
                continue
            inside = folder == "" or importer.startswith(folder + "/")
            if crate != "crate" or inside:
                depth = folder.count("/") + (1 if folder else 0)
                if best is None or depth > best[0]:
                    best = (depth, alias.target)
    if best is not None:
        return best[1]
    return "src" if crate == "crate" else None


def rust_module(importer: str, segments: list[str], lookup: Lookup) -> Module:
    """A module path (``crate::a::b``, ``self::x``, ``super::y``) to its file."""
    if not segments:
        return NOWHERE
    head, rest = segments[0], segments[1:]
    if head == "crate":
        folder = rust_crate_root(importer, lookup)
    elif head == "self":
        folder = rust_module_dir(importer)
    elif head == "super":
        folder = posixpath.dirname(rust_module_dir(importer))
        while rest and rest[0] == "super":
            folder, rest = posixpath.dirname(folder), rest[1:]
    else:
        folder = rust_crate_root(importer, lookup, head)
        if folder is None:
            return Module(external=head)
    if folder is None:
        return NOWHERE
    if not rest:
        root = lookup.first_existing([f"{folder}/{n}" if folder else n for n in RUST_ROOT_FILES])
        return Module(files=(root,), key=folder) if root else NOWHERE
    return rust_child(folder, rest, lookup)


def rust_child(folder: str, parts: list[str], lookup: Lookup) -> Module:
    base = _norm(posixpath.join(folder, *parts))
    hit = lookup.first_existing([f"{base}.rs", f"{base}/mod.rs"])
    return Module(files=(hit,), key=base) if hit else NOWHERE

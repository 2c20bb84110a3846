"""Where an import may point: candidate paths in priority order, per language.

Resolution is "the first candidate that is a file of the repository". Because the
candidates of an import do not depend on which files exist, the indexer can keep a
reverse index (candidate path -> importers) and re-resolve exactly the importers whose
answer may change when a file appears or disappears. The full per-language rules
(``__init__`` re-exports, tsconfig paths, Go, Java, Rust) are the next issue's work.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from stores.records import ImportRecord

PY_SOURCE_ROOTS = ("", "src/", "lib/")
JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")


@dataclass(frozen=True, slots=True)
class ImportTarget:
    """One import's candidates, and the external module it names if none is a file."""

    candidates: tuple[str, ...]
    external: str | None


def _python_module_paths(dotted: str) -> list[str]:
    base = dotted.replace(".", "/")
    return [
        f"{root}{base}{suffix}"
        for root in PY_SOURCE_ROOTS
        for suffix in (".py", "/__init__.py", ".pyi")
    ]


def python_targets(importer: str, imp: ImportRecord) -> list[ImportTarget]:
    """``from a.b import c`` may mean module ``a.b.c`` or name ``c`` of ``a.b``."""
    if imp.level:
        package = posixpath.dirname(importer)
        for _ in range(imp.level - 1):
            package = posixpath.dirname(package)
        base = posixpath.join(package, imp.module.replace(".", "/")) if imp.module else package
        module_files = (
            [f"{base}.py", f"{base}/__init__.py"] if imp.module else [f"{base}/__init__.py"]
        )
        targets = [
            ImportTarget((f"{base}/{name}.py", f"{base}/{name}/__init__.py", *module_files), None)
            for name in imp.names
            if name != "*"
        ]
        return targets or [ImportTarget(tuple(module_files), None)]
    top = imp.module.split(".", 1)[0]
    module_files = _python_module_paths(imp.module)
    targets = [
        ImportTarget(tuple(_python_module_paths(f"{imp.module}.{name}") + module_files), top)
        for name in imp.names
        if name != "*"
    ]
    return targets or [ImportTarget(tuple(module_files), top)]


def _js_package(spec: str) -> str:
    parts = spec.split("/")
    return "/".join(parts[:2]) if spec.startswith("@") and len(parts) > 1 else parts[0]


def js_targets(importer: str, imp: ImportRecord) -> list[ImportTarget]:
    spec = imp.module
    if not spec.startswith("."):
        return [ImportTarget((), _js_package(spec))]
    base = posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))
    stem = base.removesuffix(".js") if base.endswith(".js") else None
    candidates = [base, *(base + ext for ext in JS_EXTENSIONS)]
    if stem is not None:  # TypeScript sources import their compiled name: './a.js' -> a.ts
        candidates += [stem + ".ts", stem + ".tsx"]
    candidates += [f"{base}/index{ext}" for ext in JS_EXTENSIONS]
    return [ImportTarget(tuple(candidates), None)]


def import_targets(language: str | None, importer: str, imp: ImportRecord) -> list[ImportTarget]:
    if language == "python":
        return python_targets(importer, imp)
    if language in ("javascript", "typescript", "tsx"):
        return js_targets(importer, imp)
    return []

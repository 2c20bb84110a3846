"""External libraries: the ``ext:`` modules a repository imports, grouped into libraries.

The graph names an external module as the resolver found it (processors/graph/modules.py):
a Python top-level package, an npm package name, a full Go import path, a full Java
import, a Rust crate. A library is the unit a person would name when asked what the code
depends on, so each module is folded by the rule of its importer's language:

- Python: the top-level package (``django.db.models`` -> ``django``);
- JavaScript/TypeScript: the npm package (``@scope/pkg/sub`` -> ``@scope/pkg``,
  ``lodash/fp`` -> ``lodash``);
- Go: the module path, host/owner/repo on the code hosts (``github.com/a/b/v5/x`` ->
  ``github.com/a/b``), host/name elsewhere (``go.uber.org/zap/zapcore`` ->
  ``go.uber.org/zap``), the full path in the standard library (``net/http``);
- Java: the package, without the class and member names (``java.util.List`` ->
  ``java.util``), since a top-level name such as ``org`` or ``com`` names no library;
- Rust: the crate (``serde::de`` -> ``serde``).

A relative or absolute specifier (``./x``, ``../x``, ``/x``) is never external.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stores.records import EdgeRecord, FileRecord

JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
GO_CODE_HOSTS = frozenset({"github.com", "gitlab.com", "bitbucket.org", "golang.org"})


@dataclass(frozen=True, slots=True)
class LibraryUse:
    """A library and the number of distinct files importing any of its modules."""

    name: str
    files: int


def library_name(module: str, language: str | None) -> str | None:
    """The library an external module belongs to; None for a specifier that is a path."""
    if not module or module.startswith((".", "/")):
        return None
    if language == "python":
        return module.split(".", 1)[0]
    if language in JS_LANGUAGES or (language is None and module.startswith("@")):
        parts = module.split("/")
        return "/".join(parts[:2]) if module.startswith("@") and len(parts) > 1 else parts[0]
    if language == "go":
        parts = module.split("/")
        if "." not in parts[0]:
            return module
        return "/".join(parts[:3] if parts[0] in GO_CODE_HOSTS else parts[:2])
    if language == "java":
        package = []
        for part in module.split("."):
            if part[:1].isupper() or part == "*":
                break
            package.append(part)
        return ".".join(package) or module
    if language == "rust":
        return module.split("::", 1)[0]
    return module


def external_libraries(
    files: Mapping[str, FileRecord], edges: Mapping[Any, EdgeRecord]
) -> tuple[LibraryUse, ...]:
    """Every library imported by a file of the state, by files descending, then name."""
    importers: dict[str, set[str]] = {}
    for edge in edges.values():
        if edge.kind != "IMPORTS" or not edge.src.startswith("file:"):
            continue
        if not edge.dst.startswith("ext:"):
            continue
        path = edge.src[5:]
        record = files.get(path)
        name = library_name(edge.dst[4:], record.language if record is not None else None)
        if name is not None:
            importers.setdefault(name, set()).add(path)
    uses = [LibraryUse(name, len(paths)) for name, paths in importers.items()]
    uses.sort(key=lambda u: (-u.files, u.name))
    return tuple(uses)

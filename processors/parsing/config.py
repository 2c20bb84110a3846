"""Configuration files that change how imports resolve: go.mod, tsconfig, Cargo.toml.

Each becomes the aliases it declares, with paths relative to the repository root, so
that the resolver reads them like any other file's facts (and a changed tsconfig
re-resolves exactly the files that consulted it).
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib

from stores.records import Alias

CONFIG_FILES = {
    "go.mod": "go-module",
    "tsconfig.json": "tsconfig",
    "jsconfig.json": "tsconfig",
    "Cargo.toml": "cargo",
}

_GO_MODULE = re.compile(r"^\s*module\s+(\"?)([^\s\"]+)\1\s*$", re.M)
_JSON_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


class ConfigError(ValueError):
    """The file is not valid for its kind; the message says where."""


def config_language(path: str) -> str | None:
    return CONFIG_FILES.get(path.rsplit("/", 1)[-1])


def _join(directory: str, *parts: str) -> str:
    joined = posixpath.normpath(posixpath.join(directory, *parts))
    return "" if joined == "." else joined


def parse_config(language: str, path: str, text: str) -> tuple[str | None, tuple[Alias, ...]]:
    """(package, aliases) of one configuration file; raises ConfigError."""
    directory = posixpath.dirname(path)
    if language == "go-module":
        found = _GO_MODULE.search(text)
        if found is None:
            raise ConfigError("go.mod has no module line")
        module = found.group(2)
        return module, (Alias(prefix=module, target=directory),)
    if language == "tsconfig":
        return None, _tsconfig_aliases(directory, text)
    if language == "cargo":
        return _cargo(directory, text)
    raise ConfigError(f"not a configuration language: {language}")


def _tsconfig_aliases(directory: str, text: str) -> tuple[Alias, ...]:
    stripped = _JSON_COMMENT.sub(lambda m: m.group(1) or "", text)
    try:
        data = json.loads(_TRAILING_COMMA.sub(r"\1", stripped))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"tsconfig is not JSON: {exc}") from exc
    options = data.get("compilerOptions") or {} if isinstance(data, dict) else {}
    base = options.get("baseUrl")
    root = _join(directory, base) if isinstance(base, str) else directory
    aliases: list[Alias] = []
    paths = options.get("paths") or {}
    if isinstance(paths, dict):
        for pattern, targets in sorted(paths.items()):
            if not isinstance(targets, list) or not targets or not isinstance(targets[0], str):
                continue
            # The first target is the one TypeScript tries first.
            prefix, target = pattern.removesuffix("*"), targets[0].removesuffix("*")
            resolved = _join(root, target)
            if target.endswith("/") and resolved:
                resolved += "/"
            aliases.append(Alias(prefix=prefix, target=resolved))
    if isinstance(base, str):
        aliases.append(Alias(prefix="", target=root))  # bare specifiers under baseUrl
    return tuple(aliases)


def _cargo(directory: str, text: str) -> tuple[str | None, tuple[Alias, ...]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Cargo.toml is not TOML: {exc}") from exc
    package = data.get("package") or {}
    name = package.get("name") if isinstance(package, dict) else None
    lib = data.get("lib") or {}
    lib_path = lib.get("path") if isinstance(lib, dict) else None
    src = (
        _join(directory, posixpath.dirname(lib_path))
        if isinstance(lib_path, str)
        else _join(directory, "src")
    )
    aliases = [Alias(prefix="crate", target=src)]
    if isinstance(name, str):
        aliases.append(Alias(prefix=name.replace("-", "_"), target=src))
    return (name if isinstance(name, str) else None), tuple(aliases)

"""The parsing core: one file's bytes in, that file's symbols and imports out.

Pure and total: `parse_file` never raises. Whatever went wrong is named in `problems`
("invalid_utf8", "minified", "syntax_errors:3", "parser_failed:<Exc>",
"extract_failed:<Exc>") beside whatever could still be extracted, so a consumer can
record the file and move on.

Languages: Python, JavaScript, TypeScript and TSX, Go, Java and Rust (one module each,
plus its reference query), and the configuration files that steer import resolution
(go.mod, tsconfig/jsconfig, Cargo.toml). Cost, with references: about 2.6-3.3x a bare
`Parser.parse` of the same bytes (site-packages .py 2.7x, npm .js 2.6x, zod .ts 3.0x,
cargo registry .rs 3.3x), measured file by file in CPU time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from tree_sitter import Node

from processors.parsing import go, java, javascript, python, rust, summary
from processors.parsing.config import CONFIG_FILES, ConfigError, config_language, parse_config
from processors.parsing.reuse import TreeCache
from processors.parsing.tree import FileFacts, count_errors
from stores.records import (
    Alias,
    ImportRecord,
    Keyword,
    ReferenceRecord,
    Section,
    SymbolRecord,
)

__all__ = ["ParseResult", "language_for", "parse_file"]

log = structlog.get_logger(__name__)

_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
}
_EXTRACTORS: dict[str, tuple[Callable[[Node, FileFacts], None], tuple[bytes, ...]]] = {
    "python": (python.extract, python.COMMENT_MARKS),
    "javascript": (javascript.extract, javascript.COMMENT_MARKS),
    "typescript": (javascript.extract, javascript.COMMENT_MARKS),
    "tsx": (javascript.extract, javascript.COMMENT_MARKS),
    "go": (go.extract, go.COMMENT_MARKS),
    "java": (java.extract, java.COMMENT_MARKS),
    "rust": (rust.extract, rust.COMMENT_MARKS),
}
CONFIG_LANGUAGES = frozenset(CONFIG_FILES.values())
_BOM = b"\xef\xbb\xbf"
MINIFIED_LINE_CHARS = 1_000
MINIFIED_AVERAGE_CHARS = 300
RECENT_TREES = TreeCache()
"""The trees of the files this process parsed last: a file saved again is re-parsed
from its previous tree (processors/parsing/reuse.py)."""


@dataclass(frozen=True, slots=True)
class ParseResult:
    """The per-file facts tree-sitter gives: symbols, imports and references in source
    order, and the summaries derived from them."""

    language: str | None
    lines: int
    symbols: tuple[SymbolRecord, ...]
    imports: tuple[ImportRecord, ...]
    parse_errors: int
    problems: tuple[str, ...]
    references: tuple[ReferenceRecord, ...] = ()
    package: str | None = None
    purpose: str | None = None
    sections: tuple[Section, ...] = ()
    keywords: tuple[Keyword, ...] = ()
    aliases: tuple[Alias, ...] = ()


def language_for(path: str) -> str | None:
    """The language of a file by its name or extension, or None when we do not parse it."""
    return config_language(path) or _EXTENSIONS.get(os.path.splitext(path)[1].lower())


def count_lines(content: bytes) -> int:
    """b"" has 0 lines, b"a" and b"a\\n" one, b"a\\nb" two."""
    newlines = content.count(b"\n")
    return newlines + 1 if content and not content.endswith(b"\n") else newlines


def parse_file(path: str, content: bytes, *, trees: TreeCache = RECENT_TREES) -> ParseResult:
    """Parse one file once and extract its facts; never raises. ``trees``: where the
    previous tree of ``path`` may be kept (the result is the same either way)."""
    language = language_for(path)
    lines = count_lines(content)
    if language is None:
        return ParseResult(None, lines, (), (), 0, ())
    if language in CONFIG_LANGUAGES:
        return _parse_config(language, path, content, lines)
    problems: list[str] = []
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("invalid_utf8")
    if _is_minified(content, lines):
        problems.append("minified")
    if content.startswith(_BOM):  # tree-sitter would report the BOM as a syntax error
        content = content[len(_BOM) :]
    try:
        tree = trees.parse(path, language, content)
    except Exception as exc:  # a tree-sitter failure is a fact about this file
        trees.forget(path)
        problems.append(f"parser_failed:{type(exc).__name__}")
        return ParseResult(language, lines, (), (), 0, tuple(problems))
    if tree is None:
        problems.append("parser_failed:NoTree")
        return ParseResult(language, lines, (), (), 0, tuple(problems))
    root = tree.root_node
    parse_errors = count_errors(root)
    if parse_errors:
        problems.append(f"syntax_errors:{parse_errors}")
    extract, comment_marks = _EXTRACTORS[language]
    facts = FileFacts(content, comment_marks)
    try:
        extract(root, facts)
        symbols, imports, references = facts.symbols(), facts.imports(), facts.references()
    except Exception as exc:  # a bug of ours: keep the traceback, still answer
        log.exception("parse_extract_failed", path=path, language=language)
        problems.append(f"extract_failed:{type(exc).__name__}")
        facts = FileFacts(content, comment_marks)
        symbols, imports, references = (), (), ()
    if facts.references_truncated:
        problems.append("references_truncated")
    return ParseResult(
        language,
        lines,
        symbols,
        imports,
        parse_errors,
        tuple(problems),
        references=references,
        package=facts.package,
        purpose=summary.purpose(content, symbols),
        sections=summary.sections(symbols, imports),
        keywords=summary.keywords(path, symbols, imports),
        aliases=tuple(facts.aliases),
    )


def _parse_config(language: str, path: str, content: bytes, lines: int) -> ParseResult:
    try:
        package, aliases = parse_config(language, path, content.decode("utf-8"))
    except (ConfigError, UnicodeDecodeError) as exc:
        return ParseResult(language, lines, (), (), 0, (f"config_invalid:{exc}"[:200],))
    return ParseResult(language, lines, (), (), 0, (), package=package, aliases=aliases)


def _is_minified(content: bytes, lines: int) -> bool:
    """Generated or bundled text, judged by line lengths in bytes."""
    if not lines:
        return False
    if len(content) / lines > MINIFIED_AVERAGE_CHARS:
        return True
    return len(content) > MINIFIED_LINE_CHARS and (
        max(map(len, content.split(b"\n"))) > MINIFIED_LINE_CHARS
    )

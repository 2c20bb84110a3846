"""The parsing core: one file's bytes in, that file's symbols and imports out.

Pure and total: `parse_file` never raises. Whatever went wrong is named in `problems`
("invalid_utf8", "minified", "syntax_errors:3", "parser_failed:<Exc>",
"extract_failed:<Exc>", "references_truncated", "symbols_truncated:1300 found, 511 kept"
for Python nested deeper than its parser follows: processors/parsing/python_depth.py)
beside whatever could still be extracted, so a consumer can record the file and move
on.

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

from processors.parsing import go, java, javascript, python, python_depth, rust, summary
from processors.parsing.config import ConfigError, config_language, parse_config
from processors.parsing.reuse import TreeCache
from processors.parsing.splice import SPLICED, Facts, FactsCache
from processors.parsing.tree import FileFacts, count_errors
from stores.records import (
    CONFIG_LANGUAGES,
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
_DEFINITIONS = frozenset({"CLASS", "FUNCTION", "METHOD"})
_BOM = b"\xef\xbb\xbf"
MINIFIED_LINE_CHARS = 1_000
MINIFIED_AVERAGE_CHARS = 300
RECENT_TREES = TreeCache()
"""The trees of the files this process parsed last: a file saved again is re-parsed
from its previous tree (processors/parsing/reuse.py)."""
RECENT_FACTS = FactsCache()
"""The facts of the large files this process parsed lately: an edit of one re-extracts
only the statements around it (processors/parsing/splice.py)."""


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


def parse_file(
    path: str,
    content: bytes,
    *,
    trees: TreeCache = RECENT_TREES,
    kept: FactsCache = RECENT_FACTS,
    scope: str = "",
) -> ParseResult:
    """Parse one file once and extract its facts; never raises. ``trees``: where the
    previous tree of ``path`` may be kept, ``kept``: its previous facts, to splice the
    new ones from (the result is the same either way); ``scope``: what the path is
    relative to (the repository), so that files of one path in two repositories keep
    apart in those caches."""
    language = language_for(path)
    lines = count_lines(content)
    if language is None:
        return ParseResult(None, lines, (), (), 0, ())
    if language in CONFIG_LANGUAGES:
        return _parse_config(language, path, content, lines)
    problems: list[str] = []
    key = f"{scope}\0{path}" if scope else path
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("invalid_utf8")
    if _is_minified(content, lines):
        problems.append("minified")
    if content.startswith(_BOM):  # tree-sitter would report the BOM as a syntax error
        content = content[len(_BOM) :]
    reparsed = None
    if language in SPLICED:
        try:
            # From the previous tree when one is kept: a number or a comment edited in a
            # function body carries the facts over; else the statements around the edit.
            reparsed = trees.reparse(key, language, content)
            spliced = None if reparsed is None else kept.literal(key, content, *reparsed)
            if spliced is None:
                spliced = kept.splice(key, language, content)
        except Exception:  # a bug of ours: the whole-file parse still answers
            log.exception("parse_splice_failed", path=path, language=language)
            kept.forget(key)
            spliced = None
        if spliced is not None:
            return _result(path, language, lines, content, spliced, 0, problems)
    try:
        tree = reparsed[0] if reparsed is not None else trees.parse(key, language, content)
    except Exception as exc:  # a tree-sitter failure is a fact about this file
        trees.forget(key)
        kept.forget(key)
        problems.append(f"parser_failed:{type(exc).__name__}")
        return ParseResult(language, lines, (), (), 0, tuple(problems))
    if tree is None:
        kept.forget(key)
        problems.append("parser_failed:NoTree")
        return ParseResult(language, lines, (), (), 0, tuple(problems))
    root = tree.root_node
    parse_errors = count_errors(root)
    if parse_errors:
        problems.append(f"syntax_errors:{parse_errors}")
    extract, comment_marks = _EXTRACTORS[language]
    facts, failed = FileFacts(content, comment_marks), False
    try:
        extract(root, facts)
        found = Facts(
            facts.symbols(), facts.imports(), facts.references(), facts.references_truncated
        )
    except Exception as exc:  # a bug of ours: keep the traceback, still answer
        log.exception("parse_extract_failed", path=path, language=language)
        problems.append(f"extract_failed:{type(exc).__name__}")
        facts, failed = FileFacts(content, comment_marks), True
        found = Facts((), (), (), False)
    if parse_errors or failed or facts.whole_file:
        kept.forget(key)
    else:
        kept.keep(key, language, content, root, found)
    return _result(
        path, language, lines, content, found, parse_errors, problems, facts.package, facts.aliases
    )


def _result(
    path: str,
    language: str,
    lines: int,
    content: bytes,
    facts: Facts,
    parse_errors: int,
    problems: list[str],
    package: str | None = None,
    aliases: list[Alias] | None = None,
) -> ParseResult:
    symbols, imports = facts.symbols, facts.imports
    if facts.references_truncated:
        problems.append("references_truncated")
    if parse_errors and language == "python":
        defined = sum(s.kind in _DEFINITIONS for s in symbols)
        lost = python_depth.truncation(content, kept=defined)
        if lost is not None:
            problems.append(lost)
    return ParseResult(
        language,
        lines,
        symbols,
        imports,
        parse_errors,
        tuple(problems),
        references=facts.references,
        package=package,
        purpose=summary.purpose(content, symbols),
        sections=summary.sections(symbols, imports),
        keywords=summary.keywords(path, symbols, imports),
        aliases=tuple(aliases or ()),
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

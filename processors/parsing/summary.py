"""What a file is about, derived from its facts: purpose line, section map, keywords.

Language-independent: it reads the symbols and imports an extractor found and the
first lines of the file, so every language gets the same summaries (the Neo4j guide's
per-file purpose, section map and weighted keywords).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from itertools import takewhile

from stores.records import ImportRecord, Keyword, Section, SymbolRecord

PURPOSE_CHARS = 200
MAX_SECTIONS = 60
MAX_KEYWORDS = 20
_HEAD_LINES = 40

_COMMENT = re.compile(r"^\s*(#(?!!)|//+!?|/\*+!?|\*+/?|--|;+)\s?")
_DOCSTRING = re.compile(r'^\s*[rRbBuU]{0,2}("""|\'\'\')(.*?)(\1|$)', re.S)
_SEPARATORS = re.compile(r"[_\W]+")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_HEADER_LINE = re.compile(
    r"^(-\*-|coding[:=]|(vim?|ex):|eslint|jshint|@ts-|go:build|\+build|prettier-ignore|"
    r"@flow|@jsx|code generated .* do not edit|pylint:|noqa|type:\s*ignore|mypy:|"
    r"@(author|since|version|see|license|licence|copyright)\b)",
    re.I,
)
"""A line that is a directive to a tool (encoding, editor modeline, linter, build tag)
or a doc comment's authorship tag, never prose: dropped wherever it stands in the head."""
_BOILERPLATE = re.compile(
    r"^(copyright|\(c\)|©|authors?\b|contact\b|maintainers?\b|e-?mail\s*:|written by|"
    r"created by|licen[cs]ed?\b|spdx-|@(license|licence|copyright|author)\b)"
    r"|copyright\s+(\(c\)\s*)?\d|©|all rights reserved|spdx-license-identifier|"
    r"licensed under|under the terms of|use of this source code is governed|"
    r"permission is hereby granted|is free software|without (any )?warrant|"
    r"this (file|program|library) is part of",
    re.I,
)
"""A licence, copyright or author line (21 of the 37 files of the stdlib's ``email``
package open with "Copyright ... Author: ... Contact: ...", issue 20): a paragraph
ends at one, and one that opens with one is skipped for the paragraph or docstring
after it."""
_FILE_TAG = re.compile(r"^@(file(overview)?|module|package|brief)\b\s*", re.I)
STOPWORDS = frozenset(
    """
    the and for with from this that self cls init main get set new str int len var val
    let const def class func function return none null true false test tests args kwargs
    """.split()
)

_KIND_WEIGHT = {
    "CLASS": 3.0,
    "INTERFACE": 3.0,
    "STRUCT": 3.0,
    "TRAIT": 3.0,
    "ENUM": 2.5,
    "TYPE": 2.0,
    "FUNCTION": 2.0,
    "METHOD": 1.5,
    "MODULE": 2.0,
    "NAMESPACE": 2.0,
    "VARIABLE": 1.0,
}


def purpose(content: bytes, symbols: Sequence[SymbolRecord]) -> str | None:
    """The module docstring's first paragraph, else the leading comments' first
    paragraph, past the header boilerplate: shebang, encoding and modeline lines, tool
    directives, and the licence, copyright and author paragraphs (`_BOILERPLATE`)."""
    head = content[:8192].decode("utf-8", "replace")
    lines = head.splitlines()[:_HEAD_LINES]
    paragraphs, code = _leading_comments(lines)
    if code is not None:
        doc = _DOCSTRING.match("\n".join(lines[code:]))
        if doc:
            return _first_paragraph(doc.group(2).splitlines())
    for paragraph in paragraphs:
        prose = list(takewhile(lambda line: not _BOILERPLATE.search(line), paragraph))
        if prose:
            return _first_paragraph(prose)
    return None


def _leading_comments(lines: Sequence[str]) -> tuple[list[list[str]], int | None]:
    """The paragraphs of the comments a file opens with (their text, directives left
    out), and the index of the first line that is not a comment (None: none is)."""
    paragraphs: list[list[str]] = [[]]
    in_block = False
    for at, raw in enumerate(lines):
        stripped = raw.strip()
        if in_block:
            in_block = "*/" not in stripped
            text = stripped.split("*/", 1)[0].lstrip("*").strip()
        elif not stripped or (at == 0 and stripped.startswith("#!")):
            text = ""
        elif stripped.startswith("#!["):  # a Rust inner attribute: no prose, no end
            text = ""
        else:
            marker = _COMMENT.match(raw)
            if marker is None:
                return [p for p in paragraphs if p], at
            in_block = stripped.startswith("/*") and "*/" not in stripped[2:]
            text = raw[marker.end() :].strip().split("*/", 1)[0].strip()
        text = _FILE_TAG.sub("", text)
        if not text or _HEADER_LINE.match(text):
            if paragraphs[-1]:
                paragraphs.append([])
            continue
        paragraphs[-1].append(text)
    return [p for p in paragraphs if p], None


def _first_paragraph(lines: Sequence[str]) -> str | None:
    words: list[str] = []
    for line in lines:
        if not line.strip():
            if words:
                break
            continue
        words.append(line.strip())
    text = " ".join(words).strip()
    if not text:
        return None
    return text if len(text) <= PURPOSE_CHARS else text[: PURPOSE_CHARS - 1] + "…"


def sections(
    symbols: Sequence[SymbolRecord], imports: Sequence[ImportRecord]
) -> tuple[Section, ...]:
    """``L1-25: imports | L26-80: class AuthService``: imports, then top-level symbols."""
    found: list[tuple[int, int, str]] = []
    if imports:
        found.append((min(i.line for i in imports), max(i.line for i in imports), "imports"))
    for sym in symbols:
        if sym.parent is None:
            found.append((sym.line_start, sym.line_end, f"{sym.kind.lower()} {sym.name}"))
    found.sort()
    return tuple(
        Section(line_start=start, line_end=end, label=label)
        for start, end, label in found[:MAX_SECTIONS]
    )


@functools.lru_cache(maxsize=1 << 16)
def split_identifier(name: str) -> tuple[str, ...]:
    """``parseHTTPResponse_v2`` -> parse, http, response, v2 (lowercase parts). Cached:
    the same names recur from file to file and from one version of a file to the next
    (a 184 kB test module's 2,000 names took 15 ms to split)."""
    return tuple(part.lower() for chunk in _SEPARATORS.split(name) for part in _WORD.findall(chunk))


def keywords(
    path: str, symbols: Sequence[SymbolRecord], imports: Sequence[ImportRecord]
) -> tuple[Keyword, ...]:
    """Identifier parts weighted by where they appear; the strongest first."""
    weights: dict[str, float] = {}
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    for part in split_identifier(stem):
        weights[part] = weights.get(part, 0.0) + 2.0
    get = weights.get
    for sym in symbols:
        weight = _KIND_WEIGHT.get(sym.kind, 1.0)
        for part in split_identifier(sym.name):
            weights[part] = get(part, 0.0) + weight
    for imp in imports:
        for part in split_identifier(imp.module.replace("/", ".")):
            weights[part] = weights.get(part, 0.0) + 0.5
    ranked = sorted(
        ((term, weight) for term, weight in weights.items() if _useful(term)),
        key=lambda item: (-item[1], item[0]),
    )
    return tuple(
        Keyword(term=term, weight=round(weight, 2)) for term, weight in ranked[:MAX_KEYWORDS]
    )


def _useful(term: str) -> bool:
    return len(term) >= 3 and not term.isdigit() and term not in STOPWORDS

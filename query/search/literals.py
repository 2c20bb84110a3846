"""The string literals of the code, matched to the words of a question (issue 17).

An issue quotes what the program said: an error message, a log line, a warning. The
code that says it holds the message as a string literal, most often with placeholders
where the issue shows values (``"invalid header value {}"``, ``"cannot open %s: %v"``).
A file holding a literal whose fixed words the question quotes, in order, is evidence
that the file is where the message comes from, and a fix often lands there.

`fragments` reads a chunk's source text, in any of the parsed languages, for its
message-like literals: a run between double quotes, single quotes or backticks on one
line (triple-quoted strings are left out: in Python they are docstrings, prose that
matches prose), cut at placeholders (``%s``, ``%(name)s``, ``{}``, ``{0}``, ``{:?}``,
``${x}``) and at escapes (``\\n``); a piece is kept when it has a space, at least
`MIN_WORDS` words and `MIN_CHARS` characters, as its first `MAX_WORDS` lowercased words.
A regex over the text, not the parser's string nodes: the chunks carry their text to the
read side, and the same rule then holds in every language (a quote inside a comment can
yield a stray piece; it matches only if the question has its words in order).

`LiteralIndex` keeps each file's pieces; `matches` finds the pieces whose words occur
consecutively in the question's words and scores each file: every piece it holds adds
its length's weight (2 words 1/3, 3 words 2/3, 4 or more 1) over the number of files
holding it (a message printed in one place says more than one in ten), capped at 1.
`signals` gives three signals, the same score over three parts of the question:
``literal`` (all of it), ``literal_quoted`` (what it quotes: code blocks, inline code,
double-quoted runs, and the lines that read as an error) and ``literal_error`` (those
error lines only): a pasted session of the program also quotes its furniture (pytest's
"short test summary info"), which the error lines mostly leave out.
Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MIN_WORDS = 2
MIN_CHARS = 10
MAX_WORDS = 8
MAX_PIECES_PER_FILE = 4000
"""A generated table of strings yields thousands of pieces; past this a file's are not
kept (bounded memory, and such a file is rarely the answer)."""

_TRIPLE = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'')
_QUOTED = re.compile(
    r'"((?:[^"\\\n]|\\.)*)"'
    # a single quote opens after no word character, `&` or `<` (an apostrophe, a Rust
    # lifetime: `doesn't`, `&'a`, `<'a>`) but a string prefix's (`f'`, `rb'`)
    r"|(?:(?<![\w&<])|(?<=\b[fFbBrRuU])|(?<=\b[fFbBrR]{2}))'((?:[^'\\\n]|\\.)*)'"
    r"|`((?:[^`\\\n]|\\.)*)`"
)
_PLACEHOLDER = re.compile(
    r"%\([^)]*\)[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]"  # %(name)s
    r"|%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z%]"  # %s %d %v %5.2f %%
    r"|\$\{[^}]*\}"  # ${expr}
    r"|\{[^{}]*\}"  # {} {0} {name} {:?}
    r"|\\."  # an escape
)
_WORD = re.compile(r"[a-z0-9]+")
_FENCE = re.compile(r"```[\s\S]*?```")
_INLINE = re.compile(r"`[^`\n]+`|\"[^\"\n]+\"")
_ERROR_LINE = re.compile(
    r"error|exception|panic|warning|fatal|invalid|cannot|can't|unable|unexpected|"
    r"unsupported|not supported|not allowed|failed to|could not|couldn't|traceback",
    re.IGNORECASE,
)
SIGNALS = ("literal", "literal_quoted", "literal_error")


def words(text: str) -> list[str]:
    """The lowercased runs of ASCII letters and digits: how pieces and questions are
    both read (punctuation, case and spacing do not matter)."""
    return _WORD.findall(text.lower())


def fragments(source: str) -> list[str]:
    """The message-like pieces of the literals in ``source``, in order, without
    repeats: each its words joined by one space."""
    found: dict[str, None] = {}
    for literal in _QUOTED.finditer(_TRIPLE.sub(" ", source)):
        body = next(g for g in literal.groups() if g is not None)
        for piece in _PLACEHOLDER.split(body):
            if " " not in piece.strip():
                continue
            kept = words(piece)[:MAX_WORDS]
            joined = " ".join(kept)
            if len(kept) >= MIN_WORDS and len(joined) >= MIN_CHARS:
                found.setdefault(joined, None)
    return list(found)


def error_lines(question: str) -> str:
    """The lines of ``question`` that read as an error, a warning or a panic."""
    return "\n".join(line for line in question.splitlines() if _ERROR_LINE.search(line))


def quoted(question: str) -> str:
    """What ``question`` quotes: its fenced code blocks, its inline code and
    double-quoted runs (outside the blocks), and its error lines (`error_lines`)."""
    blocks = _FENCE.findall(question)
    rest = _FENCE.sub("\n", question)
    return "\n".join([*blocks, *_INLINE.findall(rest), error_lines(question)])


def piece_weight(piece: str) -> float:
    """2 words 1/3, 3 words 2/3, 4 or more 1: a longer quoted run is rarer by chance."""
    return min(1.0, piece.count(" ") / 3)


class LiteralIndex:
    """Each file's literal pieces, looked up by their first two words."""

    def __init__(self) -> None:
        self._of_path: dict[str, tuple[str, ...]] = {}
        self._holders: dict[str, set[str]] = {}
        self._by_head: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._of_path)

    def put(self, path: str, pieces: Iterable[str]) -> None:
        """``path``'s pieces, replacing those it had (none: it is forgotten)."""
        self.remove(path)
        kept = tuple(dict.fromkeys(pieces))[:MAX_PIECES_PER_FILE]
        if not kept:
            return
        self._of_path[path] = kept
        for piece in kept:
            self._holders.setdefault(piece, set()).add(path)
            self._by_head.setdefault(_head(piece), set()).add(piece)

    def remove(self, path: str) -> None:
        for piece in self._of_path.pop(path, ()):
            holders = self._holders[piece]
            holders.discard(path)
            if not holders:
                del self._holders[piece]
                heads = self._by_head[_head(piece)]
                heads.discard(piece)
                if not heads:
                    del self._by_head[_head(piece)]

    def pieces(self, question: str) -> list[str]:
        """The pieces whose words occur consecutively among the question's, sorted."""
        said = words(question)
        found: set[str] = set()
        for i in range(len(said) - 1):
            for piece in self._by_head.get(f"{said[i]} {said[i + 1]}", ()):
                if piece not in found and " ".join(said[i : i + piece.count(" ") + 1]) == piece:
                    found.add(piece)
        return sorted(found)

    def matches(self, question: str) -> dict[str, float]:
        """The files holding a piece the question quotes, each with its score in (0, 1]."""
        scores: dict[str, float] = {}
        for piece in self.pieces(question):
            holders = self._holders[piece]
            share = piece_weight(piece) / len(holders)
            for path in holders:
                scores[path] = scores.get(path, 0.0) + share
        return {path: round(min(1.0, score), 6) for path, score in sorted(scores.items())}

    def signals(self, question: str) -> dict[str, dict[str, float]]:
        """Each file's `SIGNALS` that are not 0 (`matches` of the three parts)."""
        found: dict[str, dict[str, float]] = {}
        if not self._of_path:
            return found
        for name, part in zip(
            SIGNALS, (question, quoted(question), error_lines(question)), strict=True
        ):
            for path, score in self.matches(part).items():
                found.setdefault(path, {})[name] = score
        return found


def _head(piece: str) -> str:
    first, second = piece.split(" ", 2)[:2]
    return f"{first} {second}"


def of_texts(texts: Mapping[str, Iterable[str]]) -> LiteralIndex:
    """An index of each file's chunk texts (tests and one-off tools)."""
    index = LiteralIndex()
    for path, chunks in texts.items():
        index.put(path, [p for text in chunks for p in fragments(text)])
    return index

"""The map of a question's pack: the files ranked next, each with its lines to read.

A question's pack spends its budget on its targets in full (the best search hits' chunks)
and on the signatures of what relates to them; a fix often spans files those do not
reach (issue 17: all the gold files were in the 8,000-token pack for 86% of Lite dev,
78% of Verified dev, 54% of the multi-language split). Aider's repo map answers the
same need: a compact listing of where else to look, priced per line. Here each of the
files the question ranks next is one line, its path and the line ranges of its
functions ranked for the question (`function_ranking`), best first:

    query/retrieval.py · L319-347 question_pack · L172-206 RepoRetrieval.search

The map holds at most ``MAP_FILES`` files and takes at most ``MAP_SHARE`` of the budget,
reserved before the targets fill theirs (context_pack.py). Both were set before any
measurement: 20 is the window the function ranking reads (`eval_localize.FUNCTION_FILES`),
an eighth of 8,000 tokens holds about 20 such lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAP_FILES = 20
MAP_SHARE = 8
"""The map's share of the budget: at most one ``MAP_SHARE``-th of it."""
SPANS_PER_FILE = 3
MAP_HEADER = "\n## map: files ranked next for the question · read these lines"


@dataclass(frozen=True, slots=True)
class Span:
    """Lines to read in a file: a function ranked for the question, or (``name`` None) the
    best chunk's lines when no function of the file was ranked."""

    line_start: int
    line_end: int
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Lead:
    """One file of the map: its path, its rank in the question's file ranking (1 is the
    first) and its lines to read, best first."""

    path: str
    rank: int
    spans: tuple[Span, ...]


def leads_of(
    ranked_paths: Sequence[str],
    functions: Sequence[tuple[str, str, int, int]],
    fallback: Mapping[str, Span],
    *,
    per_file: int = SPANS_PER_FILE,
) -> list[Lead]:
    """The map's candidates, in the file ranking's order: each file with its first
    ``per_file`` ranked functions (``functions``: (path, qualname, line_start,
    line_end), best first), or its ``fallback`` span, or none."""
    spans: dict[str, list[Span]] = {}
    for path, qualname, start, end in functions:
        got = spans.setdefault(path, [])
        if len(got) < per_file:
            got.append(Span(start, end, qualname))
    leads = []
    for rank, path in enumerate(dict.fromkeys(ranked_paths), 1):
        own = spans.get(path) or ([fallback[path]] if path in fallback else [])
        leads.append(Lead(path, rank, tuple(own)))
    return leads


def lead_line(lead: Lead) -> str:
    """``path · L10-30 name · L40-52``: a file and its lines to read."""
    parts = [lead.path]
    for span in lead.spans:
        where = f"L{span.line_start}-{span.line_end}"
        parts.append(f"{where} {span.name}" if span.name else where)
    return " · ".join(parts)


def map_header(shown: int, total: int) -> str:
    return f"{MAP_HEADER} ({shown} of {total})"

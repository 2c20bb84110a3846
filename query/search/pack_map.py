"""The map of a question's pack: the files ranked next, each with its lines to read.

A question's pack spends its budget on its targets in full (the best search hits' chunks)
and on the signatures of what relates to them; a fix often spans files those do not
reach (issue 17: all the gold files were in the 8,000-token pack for 86% of Lite dev,
78% of Verified dev, 54% of the multi-language split). Aider's repo map answers the
same need: a compact listing of where else to look, priced per line. Here each of the
files the question ranks next is one line, its path and the line ranges of its
functions ranked for the question (`function_ranking`), best first:

    query/retrieval.py · L319-347 question_pack · L172-206 RepoRetrieval.search

The map takes at most a ``MAP_SHARE``-th of the budget (1,000 of 8,000 tokens: Aider's
default map is 1,024), reserved before the targets fill theirs (context_pack.py), and
lists at most ``MAP_FILES`` source files in the ranking's order
(`retrieval.question_leads` leaves test files out), those no file group of the pack
shows already (a group gives its path and lines to read): the first ``DETAILED_FILES``
with up to ``SPANS_PER_FILE`` functions, the rest with their best one, so that a line
costs about 60-110 characters and the share holds 30-50 of them. The first cut (20
files, 3 functions each) reached the files ranked 4-20; the gold files the pack missed
on Verified dev sat at ranks 8-55 (docs/RETRIEVAL_MULTILANG.md, "The pack's map").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAP_FILES = 50
MAP_CANDIDATES = 100
"""The ranked files the map is drawn from: twice its cap, as the pack's file groups show
some of them already (on the dev splits, 50 candidates left the map 21 files on average
where its share held 30)."""
MAP_SHARE = 8
"""The map's share of the budget: at most one ``MAP_SHARE``-th of it."""
DETAILED_FILES = 10
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
    detailed: int = DETAILED_FILES,
) -> list[Lead]:
    """The map's candidates, in the file ranking's order: each of the first ``detailed``
    files with its first ``per_file`` ranked functions (``functions``: (path, qualname,
    line_start, line_end), best first), each later one with its first; a file with none
    has its ``fallback`` span, or none."""
    spans: dict[str, list[Span]] = {}
    for path, qualname, start, end in functions:
        spans.setdefault(path, []).append(Span(start, end, qualname))
    leads = []
    for rank, path in enumerate(dict.fromkeys(ranked_paths), 1):
        own = spans.get(path) or ([fallback[path]] if path in fallback else [])
        leads.append(Lead(path, rank, tuple(own[: per_file if rank <= detailed else 1])))
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

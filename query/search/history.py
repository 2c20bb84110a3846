"""The repository's own history as evidence for a question (issue 17).

Past commits pair prose with files: a commit's message says what was wrong or what
changed, its diff says where. A question that reads like the message of an earlier
commit points at the files that commit changed, and files that fixes keep landing in
are where the next fix is likelier to land. Two signals, each in [0, 1]:

- ``history``: BM25 over the messages of the commits before the question's (code-aware
  tokens); each of the `TOP_COMMITS` best commits gives its score (over the best one's)
  to every file it changed, shared among them (a commit changing one file says more of
  it than a commit changing ten); a file's sum over the best file's;
- ``fixes``: how many of those commits whose message says fix, bug, regression, crash
  or panic changed the file, on a log scale over the most fixed file's count.

Commits changing more than `MAX_FILES` files (sweeping renames, formatting, vendored
updates) are left out: they say nothing of where. Only commits before the state the
question is asked of may be read (the evaluation gives those of the base commit and its
ancestors, never later ones). Pure: the commits come from the caller (git, in
deploy/eval_history.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from query.search.sparse import FileBM25
from stores.text.tokens import tokenize

TOP_COMMITS = 50
MAX_FILES = 30
_FIX = re.compile(r"\b(fix|fixe[sd]|fixing|bug|bugs|regression|crash|panic)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Commit:
    message: str
    files: tuple[str, ...]


def is_fix(message: str) -> bool:
    return _FIX.search(message) is not None


class CommitHistory:
    """The commits of a repository before some state, ready to score questions."""

    def __init__(self, commits: Iterable[Commit]) -> None:
        self._files: list[tuple[str, ...]] = []
        self._messages = FileBM25(tokenizer=tokenize)
        fixed: dict[str, int] = {}
        for commit in commits:
            if not commit.files or len(commit.files) > MAX_FILES:
                continue
            self._messages.add(str(len(self._files)), commit.message)
            self._files.append(commit.files)
            if is_fix(commit.message):
                for path in commit.files:
                    fixed[path] = fixed.get(path, 0) + 1
        top = max(fixed.values(), default=0)
        self._fixes = {p: round(math.log1p(n) / math.log1p(top), 6) for p, n in fixed.items()}

    def __len__(self) -> int:
        return len(self._files)

    def history(self, question: str) -> dict[str, float]:
        """Each file the best matching commits changed, with its ``history`` signal."""
        hits = self._messages.search(question, limit=TOP_COMMITS)
        if not hits or hits[0][1] <= 0:
            return {}
        best = hits[0][1]
        summed: dict[str, float] = {}
        for commit, score in hits:
            files = self._files[int(commit)]
            for path in files:
                summed[path] = summed.get(path, 0.0) + score / best / len(files)
        top = max(summed.values())
        return {p: round(s / top, 6) for p, s in sorted(summed.items())}

    def fixes(self) -> dict[str, float]:
        """Each file a fix changed, with its ``fixes`` signal."""
        return dict(self._fixes)

    def signals(self, question: str, candidates: Sequence[str]) -> dict[str, dict[str, float]]:
        """``history`` and ``fixes`` of the ``candidates`` that have either."""
        history = self.history(question)
        found: dict[str, dict[str, float]] = {}
        for path in candidates:
            own = {}
            if path in history:
                own["history"] = history[path]
            if path in self._fixes:
                own["fixes"] = self._fixes[path]
            if own:
                found[path] = own
        return found

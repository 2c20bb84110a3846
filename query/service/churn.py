"""The churn ledger and the structural diff.

``churn`` lists a repository's entries oldest first (scans, commits, and the work
tree's open change last), ``churn_entry`` gives one entry with its lists, and
``structural_diff`` composes the entries between two indexed commits. Every list is cut
to ``max_tokens`` beside its true total (``query/churn/budget.py``: the lists of one
answer share the budget in turns).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from query.churn.budget import share
from query.churn.diff import structural_diff
from query.churn.entry import WORKING_TREE, ChurnEntry
from query.churn_schemas import ChurnDetail, ChurnPage, StructuralDiffOut
from query.read_model import RepoView
from query.service.base import ServiceBase
from query.service.errors import BadRequest, NotFound


def cost(item: object) -> int:
    return len(json.dumps(item)) // 4 + 1


def summary(entry: ChurnEntry) -> dict[str, Any]:
    part = entry.neighborhood
    counts = dict(part.counts) if part else {}
    return {
        "id": entry.id,
        "kind": entry.kind,
        "commit": entry.commit,
        "parents": list(entry.info.parents),
        "subject": entry.info.subject,
        "branch": entry.info.branch,
        "committed_at": entry.info.committed_at,
        "indexed_at": entry.indexed_at,
        "first_seq": entry.first_seq,
        "last_seq": entry.last_seq,
        "files_added": entry.files.counts[0],
        "files_removed": entry.files.counts[1],
        "files_changed": entry.files.counts[2],
        "symbols_added": entry.symbols.counts[0],
        "symbols_removed": entry.symbols.counts[1],
        "symbols_changed": entry.symbols.counts[2],
        "edges_added": dict(entry.edges_added),
        "edges_removed": dict(entry.edges_removed),
        "dependencies_added": entry.dependency_counts[0],
        "dependencies_removed": entry.dependency_counts[1],
        "neighborhood_changes": {
            "created": counts.get("created", 0),
            "removed": counts.get("removed", 0),
            "split": counts.get("split", 0),
            "merged": counts.get("merged", 0),
            "files_moved": part.files_moved if part else 0,
            "cohesion_changed": counts.get("cohesion_changed", 0),
        },
        "hubs_gained": list(entry.hubs_gained),
        "hubs_lost": list(entry.hubs_lost),
        "new_cycles": len(entry.new_cycles),
        "size": {**asdict(entry.size), "neighborhoods": part.neighborhoods if part else None},
        "modularity": part.modularity if part else None,
    }


def bounded(
    named: dict[str, tuple[int, Sequence[Any]]], budget: int
) -> tuple[dict[str, dict[str, Any]], bool]:
    """Each name's ``{"total", "items"}``, the lists sharing ``budget``; and whether any
    list lost items (to the budget, or never kept)."""
    names = list(named)
    taken = share([named[n][1] for n in names], budget, cost)
    out = {
        n: {"total": named[n][0], "items": list(named[n][1][:k])}
        for n, k in zip(names, taken, strict=True)
    }
    return out, any(k < named[n][0] for n, k in zip(names, taken, strict=True))


def entry_lists(entry: ChurnEntry) -> dict[str, tuple[int, Sequence[Any]]]:
    """An entry's lists with their true totals, named ``group.key`` (or ``group``)."""
    part = entry.neighborhood
    files, symbols = entry.files, entry.symbols
    return {
        "files.added": (files.counts[0], files.added),
        "files.removed": (files.counts[1], files.removed),
        "files.changed": (files.counts[2], files.changed),
        "symbols.added": (symbols.counts[0], symbols.added),
        "symbols.removed": (symbols.counts[1], symbols.removed),
        "symbols.changed": (symbols.counts[2], symbols.changed),
        "dependencies.added": (
            entry.dependency_counts[0],
            [asdict(d) for d in entry.dependencies_added],
        ),
        "dependencies.removed": (
            entry.dependency_counts[1],
            [asdict(d) for d in entry.dependencies_removed],
        ),
        "neighborhood_events": (
            part.events_total if part else 0,
            [e.model_dump(mode="json") for e in part.events] if part else [],
        ),
        "cycles": (len(entry.new_cycles), [list(c) for c in entry.new_cycles]),
    }


class ChurnAnswers(ServiceBase):
    def _entries(self, view: RepoView) -> list[ChurnEntry]:
        def compute() -> list[ChurnEntry]:
            open_ = view.churn.working_tree(view.state, view.file_graph)
            return [*view.churn.entries, *([open_] if open_ is not None else [])]

        return self._cache.get(view, "churn", compute)

    def churn(
        self, repo: str, limit: int = 50, offset: int = 0, max_tokens: int = 4000
    ) -> ChurnPage:
        """How each scan, commit and the work tree changed the code graph, oldest first."""
        view = self.view(repo)
        found = self._entries(view)
        page = [summary(e) for e in found[offset : offset + limit]]
        kept = share([page], max_tokens, cost)[0]
        return ChurnPage.model_validate(
            {
                "repo": repo,
                "total": len(found),
                "offset": offset,
                "limit": limit,
                "truncated": kept < len(page),
                "items": page[:kept],
                "freshness": self.model.freshness(repo),
            }
        )

    def churn_entry(self, repo: str, entry_id: str, max_tokens: int = 4000) -> ChurnDetail:
        """One churn entry (a sha, 'scan:...' or 'working-tree') with its lists."""
        view = self.view(repo)
        found = self._entries(view)
        if entry_id == WORKING_TREE:
            entry = found[-1] if found and found[-1].kind == "working_tree" else None
        else:
            index = view.churn.find(entry_id)
            entry = view.churn.entries[index] if index is not None else None
        if entry is None:
            raise NotFound(f"no churn entry {entry_id!r} in {repo!r}; see /churn")
        head = summary(entry)
        lists, truncated = bounded(entry_lists(entry), max_tokens - cost(head))
        body: dict[str, Any] = {
            **head,
            "truncated": truncated,
            "freshness": self.model.freshness(repo),
        }
        for name, value in lists.items():
            group, _, key = name.partition(".")
            if key:
                body.setdefault(group, {})[key] = value
            else:
                body[group] = value
        return ChurnDetail.model_validate(body)

    def structural_diff(
        self, repo: str, base: str, head: str, max_tokens: int = 4000
    ) -> StructuralDiffOut:
        """What changed structurally from one indexed commit to a later one."""
        view = self.view(repo)
        ledger = view.churn
        at = {name: ledger.find_commit(sha) for name, sha in (("base", base), ("head", head))}
        for name, index in at.items():
            if index is None:
                raise NotFound(f"{name} commit not in the churn ledger of {repo!r}")
        b, h = at["base"], at["head"]
        assert b is not None and h is not None
        if b >= h:
            raise BadRequest(f"base {base!r} is not before head {head!r}")
        d = structural_diff(list(ledger.entries), b, h)
        items: dict[str, Sequence[Any]] = {
            "dependencies_added": [asdict(x) for x in d.dependencies_added],
            "dependencies_removed": [asdict(x) for x in d.dependencies_removed],
            "files_added": d.files_added,
            "files_removed": d.files_removed,
            "files_renamed": [asdict(x) for x in d.files_renamed],
            "files_moved": [asdict(x) for x in d.files_moved],
            "entry_points_changed": [asdict(x) for x in d.entry_points_changed],
        }
        lists, truncated = bounded({k: (len(v), v) for k, v in items.items()}, max_tokens)
        return StructuralDiffOut.model_validate(
            {
                "repo": repo,
                "base": ledger.entries[b].commit,
                "head": ledger.entries[h].commit,
                "entries": d.entries,
                **lists,
                "truncated": truncated,
                "freshness": self.model.freshness(repo),
            }
        )

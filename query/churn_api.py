"""The churn ledger and the structural diff, served from the read model.

``/churn`` lists a repository's entries oldest first (scans, commits, and the work
tree's open change last), ``/churn/{entry_id}`` gives one entry with its lists, and
``/diff`` composes the entries between two indexed commits. Every list is cut to
``max_tokens`` beside its true total (``query/churn/budget.py``: the lists of one
answer share the budget in turns).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, HTTPException, Path, Query

from query.churn.budget import share
from query.churn.diff import structural_diff
from query.churn.entry import WORKING_TREE, ChurnEntry
from query.churn_schemas import ChurnDetail, ChurnPage, StructuralDiffOut
from query.neighborhood_api import StateCache
from query.read_model import ReadModel, RepoView
from query.repo_lookup import repo_view as lookup_repo

MAX_PAGE = 1000
MAX_TOKENS = Query(4000, ge=100, le=50_000, description="bound on the answer")


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


def create_churn_routes(model: ReadModel) -> APIRouter:
    router = APIRouter(tags=["churn"])
    cache = StateCache()

    def entries(view: RepoView) -> list[ChurnEntry]:
        def compute() -> list[ChurnEntry]:
            open_ = view.churn.working_tree(view.state, view.file_graph)
            return [*view.churn.entries, *([open_] if open_ is not None else [])]

        return cache.get(view, "churn", compute)

    @router.get("/repositories/{repo}/churn", response_model=ChurnPage)
    async def churn(
        repo: str,
        limit: int = Query(50, ge=1, le=MAX_PAGE),
        offset: int = Query(0, ge=0),
        max_tokens: int = MAX_TOKENS,
    ) -> ChurnPage:
        """How each scan, commit and the work tree changed the code graph, oldest first:
        files, symbols, edges by type, file dependencies, neighborhoods, hubs, new import
        cycles, and the graph's size and modularity after it."""
        view = lookup_repo(model, repo)
        found = entries(view)
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
                "freshness": model.freshness(repo),
            }
        )

    @router.get("/repositories/{repo}/churn/{entry_id}", response_model=ChurnDetail)
    async def churn_entry(
        repo: str,
        entry_id: str = Path(..., description="a churn entry id, as `churn` lists them"),
        max_tokens: int = MAX_TOKENS,
    ) -> ChurnDetail:
        """One churn entry (a sha, 'scan:...' or 'working-tree') with its lists: files and
        symbols added, removed and changed, dependencies, neighborhood events, new cycles."""
        view = lookup_repo(model, repo)
        found = entries(view)
        if entry_id == WORKING_TREE:
            entry = found[-1] if found and found[-1].kind == "working_tree" else None
        else:
            index = view.churn.find(entry_id)
            entry = view.churn.entries[index] if index is not None else None
        if entry is None:
            raise HTTPException(404, f"no churn entry {entry_id!r} in {repo!r}; see /churn")
        head = summary(entry)
        part = entry.neighborhood
        lists, truncated = bounded(
            {
                "files.added": (entry.files.counts[0], entry.files.added),
                "files.removed": (entry.files.counts[1], entry.files.removed),
                "files.changed": (entry.files.counts[2], entry.files.changed),
                "symbols.added": (entry.symbols.counts[0], entry.symbols.added),
                "symbols.removed": (entry.symbols.counts[1], entry.symbols.removed),
                "symbols.changed": (entry.symbols.counts[2], entry.symbols.changed),
                "dependencies.added": _dependencies(
                    entry.dependency_counts[0], entry.dependencies_added
                ),
                "dependencies.removed": _dependencies(
                    entry.dependency_counts[1], entry.dependencies_removed
                ),
                "neighborhood_events": (
                    part.events_total if part else 0,
                    [e.model_dump(mode="json") for e in part.events] if part else [],
                ),
                "cycles": (len(entry.new_cycles), [list(c) for c in entry.new_cycles]),
            },
            max_tokens - cost(head),
        )
        body: dict[str, Any] = {**head, "truncated": truncated, "freshness": model.freshness(repo)}
        for name, value in lists.items():
            group, _, key = name.partition(".")
            if key:
                body.setdefault(group, {})[key] = value
            else:
                body[group] = value
        return ChurnDetail.model_validate(body)

    @router.get("/repositories/{repo}/diff", response_model=StructuralDiffOut)
    async def diff(
        repo: str,
        base: str = Query(..., min_length=1, description="the commit to compare from"),
        head: str = Query(..., min_length=1, description="the later commit to compare to"),
        max_tokens: int = MAX_TOKENS,
    ) -> StructuralDiffOut:
        """What changed structurally from one indexed commit to a later one (a pull
        request's review): dependencies added and removed, files added, removed and
        renamed, files moved between neighborhoods, neighborhoods' entry points."""
        view = lookup_repo(model, repo)
        ledger = view.churn
        at = {name: ledger.find_commit(sha) for name, sha in (("base", base), ("head", head))}
        for name, index in at.items():
            if index is None:
                raise HTTPException(404, f"{name} commit not in the churn ledger of {repo!r}")
        b, h = at["base"], at["head"]
        assert b is not None and h is not None
        if b >= h:
            raise HTTPException(400, f"base {base!r} is not before head {head!r}")
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
                "freshness": model.freshness(repo),
            }
        )

    return router


def _dependencies(total: int, found: Sequence[Any]) -> tuple[int, list[dict[str, Any]]]:
    return total, [asdict(d) for d in found]

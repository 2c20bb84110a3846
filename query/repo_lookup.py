"""The repository a request names, or the 404 every endpoint answers alike."""

from __future__ import annotations

from fastapi import HTTPException

from query.read_model import ReadModel, RepoView


def repo_view(model: ReadModel, repo: str) -> RepoView:
    view = model.repos.get(repo)
    if view is None:
        raise HTTPException(404, f"unknown repository {repo!r}; see /repositories")
    return view

"""Stable repository ids.

A repository id must not change when the repository is indexed again, moved to another
directory on the same machine, or indexed from another machine, because it keys every
topic and every record. The id is derived from the origin remote URL when there is one
(the same repository cloned twice is one repository), else from the resolved path.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

_SLUG = re.compile(r"[^a-z0-9]+")


def normalize_remote(url: str) -> str:
    """``git@host:org/app.git`` and ``https://host/org/app`` name the same repository."""
    url = url.strip()
    url = re.sub(r"^[a-z+]+://", "", url)
    url = re.sub(r"^[^@/]+@", "", url)
    url = url.replace(":", "/", 1) if ":" in url.split("/", 1)[0] else url
    url = url.removesuffix("/").removesuffix(".git")
    return url.lower()


def repository_id(path: Path, remote_url: str | None) -> str:
    """``<name>-<8 hex>``: readable, and unique by remote (or by path without one)."""
    identity = normalize_remote(remote_url) if remote_url else str(path.resolve())
    name = _SLUG.sub("-", Path(identity).name.lower()).strip("-") or "repo"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:8]
    return f"{name}-{digest}"

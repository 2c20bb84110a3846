"""Node ids of the graph. A node's owner (the file whose facts produce it) is in its id."""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

from stores.repo_state import owner_path


def file_id(path: str) -> str:
    return f"file:{path}"


def symbol_id(path: str, qualname: str) -> str:
    return f"sym:{path}:{qualname}"


def external_id(module: str) -> str:
    return f"ext:{module}"


def folder_id(path: str) -> str:
    """``dir:`` plus the folder's path; the repository root is ``dir:`` alone."""
    return f"dir:{path}"


def path_of(node_id: str) -> str | None:
    """The file a file or symbol node belongs to (None for folders and externals)."""
    owner = owner_path(node_id)
    return None if owner is None or owner.startswith("/") else owner


def folder_of(path: str) -> str:
    """The folder holding ``path`` ('' for the repository root)."""
    return posixpath.dirname(path)


_TEST_FILE = re.compile(
    r"(^|/)(tests?|__tests__|spec)/|(^|/)test_[^/]*\.py$|_test\.(py|go)$|"
    r"(Test|Tests|IT)\.java$|\.(test|spec)\.[jt]sx?$"
)


@lru_cache(maxsize=1 << 16)  # asked per edge of a test file: a regex search each time
def is_test_path(path: str) -> bool:
    return _TEST_FILE.search(path) is not None

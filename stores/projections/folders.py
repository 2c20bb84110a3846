"""Folder and repository nodes: the tree above the files, with levels counted bottom-up.

A folder exists while a file lies under it. Its level is its height: a folder holding
only files is 1, a folder holding folders is one more than the highest of them (the
Neo4j guide's bottom-up levels). The root folder is the REPOSITORY node.
"""

from __future__ import annotations

import itertools
import posixpath

from stores.projections.ids import file_id, folder_id
from stores.records import EdgeRecord, NodeRecord

EdgeKey = tuple[str, str, str]


def ancestors(path: str) -> list[str]:
    """Folders above a file, deepest first, the root ('') last."""
    found = []
    folder = posixpath.dirname(path)
    while folder:
        found.append(folder)
        folder = posixpath.dirname(folder)
    found.append("")
    return found


class FolderTree:
    def __init__(self, repo: str) -> None:
        self.repo = repo
        self.files: dict[str, set[str]] = {}  # folder -> files directly in it
        self.folders: dict[str, set[str]] = {}  # folder -> folders directly in it
        self.under: dict[str, int] = {}  # folder -> files anywhere under it
        self.levels: dict[str, int] = {}

    def add(self, path: str) -> list[str]:
        """Record a new file; returns the folders whose node or edges may change."""
        chain = ancestors(path)
        self.files.setdefault(chain[0], set()).add(path)
        for child, parent in itertools.pairwise(chain):
            self.folders.setdefault(parent, set()).add(child)
        for folder in chain:
            self.under[folder] = self.under.get(folder, 0) + 1
        self._relevel(chain)
        return chain

    def remove(self, path: str) -> list[str]:
        chain = ancestors(path)
        direct = self.files.get(chain[0])
        if direct is not None:
            direct.discard(path)
            if not direct:
                del self.files[chain[0]]
        for folder in chain:
            self.under[folder] -= 1
            if not self.under[folder]:
                del self.under[folder]
                self.levels.pop(folder, None)
                parent = posixpath.dirname(folder) if folder else None
                if parent is not None and parent in self.folders:
                    self.folders[parent].discard(folder)
                    if not self.folders[parent]:
                        del self.folders[parent]
        self._relevel(chain)
        return chain

    def _relevel(self, chain: list[str]) -> None:
        for folder in chain:  # deepest first: children are settled before parents
            if folder in self.under:
                below = [self.levels.get(c, 1) for c in self.folders.get(folder, ())]
                self.levels[folder] = 1 + max(below, default=0)

    def subgraph(self, folder: str) -> tuple[dict[str, NodeRecord], dict[EdgeKey, EdgeRecord]]:
        """The folder's node and its CONTAINS edges; nothing once it holds no file."""
        if folder not in self.under:
            return {}, {}
        node_id = folder_id(folder)
        node = NodeRecord(
            id=node_id,
            kind="FOLDER" if folder else "REPOSITORY",
            name=posixpath.basename(folder) if folder else self.repo,
            path=folder,
            level=self.levels[folder],
        )
        edges: dict[EdgeKey, EdgeRecord] = {}
        for child in sorted(self.folders.get(folder, ())):
            edge = EdgeRecord(src=node_id, dst=folder_id(child), kind="CONTAINS")
            edges[edge.key] = edge
        for path in sorted(self.files.get(folder, ())):
            edge = EdgeRecord(src=node_id, dst=file_id(path), kind="CONTAINS")
            edges[edge.key] = edge
        return {node_id: node}, edges

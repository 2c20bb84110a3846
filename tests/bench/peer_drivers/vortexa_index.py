"""vortexa's cold index of one tree, BM25 only and offline (run by vortexa's own venv).

    python vortexa_index.py ROOT INDEX_DIR

`CodebaseIndexer.index()` as vortexa's CLI calls it (code files only, its default),
into an empty INDEX_DIR: walking, tree-sitter chunking, the BM25 index, the LMDB
state. vortexa's CLI always builds its dense embedder first, whose weights come from
a model hub this machine cannot reach; here a stand-in encoder gives every chunk a
one-dimensional zero vector instead, so what is timed is the BM25-only index.
Prints one JSON line: the seconds since this process started, its import time, and
vortexa's own `IndexStats`.
"""

from __future__ import annotations

import json
import sys
import time

STARTED = time.perf_counter()

import numpy as np  # noqa: E402
from vortexa.core.indexer import CodebaseIndexer  # noqa: E402


class ZeroEncoder:
    """vortexa's `Encoder` protocol without a model: no dense retrieval."""

    dim = 1

    def encode(self, texts, /, **kwargs):  # type: ignore[no-untyped-def]
        return np.zeros((len(texts), self.dim), dtype=np.float32)


def main() -> None:
    root, index_dir = sys.argv[1], sys.argv[2]
    imported = time.perf_counter()
    indexer = CodebaseIndexer(root=root, model=ZeroEncoder(), index_dir=index_dir)
    stats = indexer.index()
    hits = indexer.search("parse the expression", top_k=3, alpha=0.0)  # BM25 only
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "import_s": imported - STARTED,
                "index_s": stats.index_time_ms / 1000,
                "in_process_s": done - STARTED,
                "indexed_files": stats.indexed_files,
                "total_chunks": stats.total_chunks,
                "languages": dict(stats.languages),
                "search_hits": len(hits),
            }
        )
    )


if __name__ == "__main__":
    main()

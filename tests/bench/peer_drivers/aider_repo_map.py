"""Aider's repo map of one tree, cold (run by aider-chat's own venv).

    python aider_repo_map.py ROOT MAP_TOKENS OUT_FILE

`aider.repomap.RepoMap` as aider builds it with no files in the chat: every file git
tracks handed over as ``other_files``, a map budget of MAP_TOKENS and gpt-4o's context
window (so the map may grow to MAP_TOKENS x 8, aider's ``map_mul_no_files``). Cold: the
tags cache (``.aider.tags.cache.v4`` in ROOT) must be absent; the caller removes it.
Tokens are counted as aider's `Model.token_count` counts a string (litellm's tokenizer
for gpt-4o, which ships with litellm); the `Model` itself is not built, because it asks
the network for model metadata first (8 s of retries on a machine without it).
Writes the map to OUT_FILE and prints one JSON line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

STARTED = time.perf_counter()

import litellm  # noqa: E402
from aider.io import InputOutput  # noqa: E402
from aider.repomap import RepoMap  # noqa: E402

CONTEXT_WINDOW = 128_000  # gpt-4o's, as aider's model settings give it


class TokenCounter:
    """The part of aider's `Model` the repo map uses."""

    name = "gpt-4o"

    def token_count(self, text: str) -> int:
        return len(litellm.encode(model=self.name, text=text))


def main() -> None:
    root, budget, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    imported = time.perf_counter()
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
    ).stdout.decode()
    files = [f"{root}/{p}" for p in listed.split("\0") if p]
    io = InputOutput(pretty=False, yes=True, fancy_input=False)
    repo_map = RepoMap(
        map_tokens=budget,
        root=root,
        main_model=TokenCounter(),
        io=io,
        max_context_window=CONTEXT_WINDOW,
    )
    text = repo_map.get_repo_map(chat_files=[], other_files=files) or ""
    done = time.perf_counter()
    with open(out, "w") as sink:
        sink.write(text)
    print(
        json.dumps(
            {
                "import_s": imported - STARTED,
                "map_s": done - imported,
                "in_process_s": done - STARTED,
                "files_given": len(files),
                "map_tokens": TokenCounter().token_count(text),
            }
        )
    )


if __name__ == "__main__":
    main()

"""A producer restarted after changes it did not see: reconcile from the last indexed commit.

The state after the restart must equal a full index of the same work tree, whether the
producer reconciled with a git diff or, the commit being gone, scanned everything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stores.repo_state import printable
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually, open_stack, stack_settings

pytestmark = pytest.mark.integration

FILES = {
    f"pkg/m{i}.py": f"import pkg.m{(i + 1) % 12}\n\ndef f{i}():\n    return {i}\n"
    for i in range(12)
}


async def fresh_at(stack: Stack, root: Path, commit: str) -> str:
    rid = ""

    async def check() -> bool:
        nonlocal rid
        for item in (await stack.get("/repositories"))["items"]:
            if item["name"] == root.name:
                rid = item["repo"]
                f = item["freshness"]
                return f["status"] == "fresh" and f["indexed_commit"] == commit
        return False

    await eventually(check, 60, f"fresh at {commit[:8]}")
    return rid


PROVENANCE = {"origin", "commit", "working_tree", "producer"}


def content_of(stack: Stack, rid: str) -> tuple:
    """Files, nodes, edges and the indexed commit; not where each file was last read
    from (a reconciliation does not read unchanged files again, a full scan does)."""
    state = stack.model.repos[rid].state
    return (
        sorted(printable(r).model_dump_json(exclude=PROVENANCE) for r in state.files.values()),
        sorted(n.model_dump_json() for n in state.nodes.values()),
        sorted(e.model_dump_json() for e in state.edges.values()),
        state.indexed_commit,
    )


async def full_index(broker, tmp_path: Path, root: Path, commit: str) -> tuple:
    reference = await open_stack(stack_settings(broker.bootstrap, tmp_path / "reference"))
    await reference.start_worker()
    await reference.start_query()
    try:
        await reference.start_sources([root])
        rid = await fresh_at(reference, root, commit)
        return content_of(reference, rid)
    finally:
        await reference.close()


def change_while_stopped(repo: GitRepo) -> str:
    repo.write("pkg/m1.py", "def f1():\n    return 'changed'\n")
    (repo.root / "pkg/m2.py").unlink()
    head = repo.commit("change m1, drop m2")
    repo.write("pkg/new.py", "import pkg.m3\n")  # untracked
    repo.write("pkg/m4.py", "def f4():\n    return 'dirty'\n")  # uncommitted
    return head


async def test_restart_reconciles_with_a_git_diff(broker, stack: Stack, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "app", FILES)
    await stack.start_sources([repo.root])
    rid = await fresh_at(stack, repo.root, repo.head())
    await stack.stop("sources")
    head = change_while_stopped(repo)

    await stack.start_sources([repo.root])
    await fresh_at(stack, repo.root, head)
    status = stack.model.repos[rid].status
    # The claim, then 4 paths and a barrier: a diff, not a full scan.
    assert status is not None and status.last_seq == 6, "not a diff: 4 paths and a barrier"
    state = stack.model.repos[rid].state
    assert state.files["pkg/m4.py"].working_tree is True and "pkg/m2.py" not in state.files
    assert content_of(stack, rid) == await full_index(broker, tmp_path, repo.root, head)


async def test_restart_falls_back_to_a_full_scan_when_the_commit_is_gone(
    broker, stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", FILES)
    await stack.start_sources([repo.root])
    rid = await fresh_at(stack, repo.root, repo.head())
    await stack.stop("sources")
    # Rewrite history so that the indexed commit no longer exists.
    repo.write("pkg/m0.py", "def f0():\n    return 'amended'\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "--amend", "-m", "rewritten")
    repo.git("reflog", "expire", "--expire=now", "--all")
    repo.git("gc", "-q", "--prune=now")
    head = change_while_stopped(repo)

    await stack.start_sources([repo.root])
    await fresh_at(stack, repo.root, head)
    status = stack.model.repos[rid].status
    # The claim, every file, the barrier.
    assert status is not None and status.last_seq == len(FILES) + 2, "not a full scan"
    assert content_of(stack, rid) == await full_index(broker, tmp_path, repo.root, head)

"""The scan of a plain directory against git's own answer, on trees git is asked about.

Three sources of trees: a few hundred random small trees with random ``.gitignore``
files (nested) and ``info/exclude`` (a seeded generator: hypothesis is not installed);
a generated Go-like tree with the ``*`` / ``!*.*`` / ``!*/`` idiom, which always runs;
and real repositories, when some are checked out here (``/work/benchrepos/*`` or the
paths in ``GAZETTEER_TEST_REAL_REPOS``, ``:``-separated), else skipped.

On each, three answers must agree: ``git ls-files --cached --others --exclude-standard``
(after ``git init``, the user's global ignores shut out: tests/gitignore_oracle.py),
the pure ``kept_files`` over the listing, and the scan's walk of the directory
(``WorkTree(root, None)``); and ``WorkTree.ignored`` (what the watcher asks) must agree
with ``git check-ignore`` on every file and directory.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from producers.ignore import kept_files
from producers.scan import WorkTree
from tests.gitignore_oracle import git, git_ignored, git_kept, write_tree

PATTERNS = [
    *["*", "!*.*", "!*/", "*.log", "/build", "build/", "docs/**/*.md", "!keep.log"],
    *["a/b", "**/tmp", "\\#x", "!build/", "tmp/", "*.md", "!docs/", "b/**", "a/**/b"],
    *["!/build", "src/*", "?.txt", "[ab]", "*.lo[g]", "*.md  ", "\\!x", "!a/", "a", "!b"],
    *["docs/", "/a/b/", "**/b/", "!**/keep.log", "#x", "", "*/", "!tmp", "!*.md", "x.d/"],
]
DIR_NAMES = ["a", "b", "build", "docs", "tmp", "src", "x.d"]
FILE_NAMES = ["main.go", "Makefile", "keep.log", "x.log", "README.md", "#x", "!x", "b", "tmp"]
FILE_NAMES += ["a.txt", "build", "LICENSE", "n.md", "a"]
CASES = 200


@dataclass(frozen=True)
class Tree:
    files: list[str]  # .gitignore files aside
    ignore_files: dict[str, str]
    exclude: str | None

    def listing(self) -> list[str]:
        ignores = [f"{d}/.gitignore" if d else ".gitignore" for d in self.ignore_files]
        return [*self.files, *ignores]


def random_tree(rng: random.Random) -> Tree:
    files: list[str] = []
    ignore_files: dict[str, str] = {}

    def fill(directory: str, depth: int) -> None:
        if rng.random() < (0.8 if not directory else 0.4):
            lines = rng.choices(PATTERNS, k=rng.randint(1, 5))
            if rng.random() < 0.2:  # the Go idiom, then more lines to argue with it
                lines = ["*", "!*.*", "!*/", *lines[:2]]
            ignore_files[directory] = "".join(f"{line}\n" for line in lines)
        names = rng.sample(sorted({*DIR_NAMES, *FILE_NAMES}), k=rng.randint(1, 6))
        for name in names:
            path = f"{directory}/{name}" if directory else name
            if name in DIR_NAMES and depth < 3 and (name not in FILE_NAMES or rng.random() < 0.6):
                fill(path, depth + 1)
            elif name in FILE_NAMES:
                files.append(path)

    fill("", 0)
    exclude = "".join(f"{p}\n" for p in rng.choices(PATTERNS, k=2)) if rng.random() < 0.3 else None
    return Tree(files, ignore_files, exclude)


def disagreements(root: Path, tree: Tree) -> list[str]:
    """What the scan, the pure rules and ``ignored`` get wrong here, by git's answer."""
    write_tree(root, tree.files, tree.ignore_files, tree.exclude)
    want = git_kept(root)
    pure = kept_files(tree.listing(), tree.ignore_files, tree.exclude or "")
    work_tree = WorkTree(root, None)
    scanned = work_tree.list()
    dirs = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir()}
    everything = sorted({*tree.listing(), *dirs} - {".git"})
    everything = [p for p in everything if not p.startswith(".git/")]
    ignored_by_git = git_ignored(root, everything)
    ignored = work_tree.ignored(everything)
    problems = []
    if pure != want:
        problems.append(f"kept_files: {sorted(set(pure) ^ set(want))}")
    if scanned != want:
        problems.append(f"scan: {sorted(set(scanned) ^ set(want))}")
    if ignored != ignored_by_git:
        problems.append(f"ignored: {sorted(ignored ^ ignored_by_git)}")
    return problems


def test_random_trees_keep_what_git_keeps(tmp_path: Path):
    failures = []
    for seed in range(CASES):
        tree = random_tree(random.Random(seed))
        problems = disagreements(tmp_path / f"case{seed}", tree)
        if problems:
            failures.append((seed, tree.ignore_files, tree.exclude, problems))
    assert failures[:3] == []


def test_the_generator_meets_the_interesting_cases():
    """A differential test is only as good as its trees: they must re-include files
    under re-included directories, nest .gitignores and use info/exclude."""
    trees = [random_tree(random.Random(seed)) for seed in range(CASES)]
    go_like = [t for t in trees if {"*", "!*.*", "!*/"} <= set(t.ignore_files.get("", "").split())]
    assert len(go_like) >= 3
    assert sum(1 for t in trees if len(t.ignore_files) >= 2) >= CASES // 3
    assert sum(1 for t in trees if t.exclude) >= CASES // 5
    assert sum(1 for t in trees if any(f.count("/") >= 2 for f in t.files)) >= CASES // 2


def go_like_tree() -> Tree:
    """Packages of Go code with extensionless binaries, testdata and build files
    beside, the ``*``/``!*.*``/``!*/`` idiom at the top and a nested override."""
    files = ["go.mod", "go.sum", "LICENSE", "Makefile", "README.md", "bin/server", "bin/x.sh"]
    files += [".github/workflows/ci.yml", "coverage.out"]
    for i in range(40):
        pkg = f"internal/pkg{i:02}" if i % 2 else f"pkg{i:02}/sub"
        files += [f"{pkg}/a.go", f"{pkg}/a_test.go", f"{pkg}/{pkg.split('/')[-1]}"]
        files += [f"{pkg}/testdata/golden", f"{pkg}/testdata/in.json", f"{pkg}/doc.md"]
    files += ["tools/Makefile", "tools/gen/main.go", "tools/gen/gen"]
    ignore_files = {
        "": "# Binaries\n*\n!*.*\n!*/\n\n*.out\n/bin/\n",
        "tools": "!Makefile\n",
    }
    return Tree(files, ignore_files, "pkg00/\n")


def test_a_go_like_tree_keeps_every_file_with_a_dot(tmp_path: Path):
    tree = go_like_tree()
    assert disagreements(tmp_path, tree) == []
    kept = WorkTree(tmp_path, None).list()
    # info/exclude's "pkg00/" changes nothing: the .gitignore's "!*/" outranks it
    by_hand = sorted(
        p
        for p in tree.listing()
        if ("." in p.rsplit("/", 1)[-1] or p == "tools/Makefile")
        and not p.startswith("bin/")
        and p != "coverage.out"
    )
    assert kept == by_hand
    assert (len(kept), len(tree.listing())) == (168, 254)
    # what the watcher lists when a directory appears: the same rules, from there down
    under = WorkTree(tmp_path, None)
    under.list()
    assert under.list(under="tools") == [
        "tools/.gitignore",
        "tools/Makefile",
        "tools/gen/main.go",
    ]


def test_a_linked_work_tree_reads_the_common_info_exclude(tmp_path: Path):
    write_tree(tmp_path / "main", ["a.py"], {})
    who = ["-c", "user.name=T", "-c", "user.email=t@e"]
    git(tmp_path / "main", *who, "commit", "-q", "--allow-empty", "-m", "root")
    git(tmp_path / "main", "worktree", "add", "-q", str(tmp_path / "linked"))
    (tmp_path / "main" / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / "main" / ".git" / "info" / "exclude").write_text("*.tmp\n")
    for name in ["x.tmp", "y.py"]:
        (tmp_path / "linked" / name).write_text(name)
    assert git_kept(tmp_path / "linked") == ["y.py"]
    assert WorkTree(tmp_path / "linked", None).list() == ["y.py"]


def test_a_symlinked_gitignore_is_not_read_as_git_does_not(tmp_path: Path):
    (tmp_path / "elsewhere").write_text("*.py\n")
    tree = Tree(["a.py", "b.txt"], {}, None)
    write_tree(tmp_path / "r", tree.files, {})
    (tmp_path / "r" / ".gitignore").symlink_to(tmp_path / "elsewhere")
    assert git_kept(tmp_path / "r") == [".gitignore", "a.py", "b.txt"]
    assert WorkTree(tmp_path / "r", None).list() == [".gitignore", "a.py", "b.txt"]


def real_repositories() -> list[Path]:
    roots = [Path(p) for p in os.environ.get("GAZETTEER_TEST_REAL_REPOS", "").split(":") if p]
    bench = Path("/work/benchrepos")
    if bench.is_dir():
        roots += sorted(p for p in bench.iterdir() if (p / ".git").exists())
    return [r for r in roots if (r / ".git").exists()]


@pytest.mark.skipif(not real_repositories(), reason="no checked-out repository here")
@pytest.mark.parametrize("root", real_repositories(), ids=str)
def test_a_real_repository_scans_as_git_lists_it(root: Path):
    """The walk of the work tree as a plain directory (it never enters ``.git``; it
    reads ``info/exclude`` as git does), against what git lists that is not ignored:
    untracked and tracked files, less tracked files the rules ignore (force-added)
    and tracked files deleted. Submodules and nested repositories are left out of
    both sides (git lists them as one entry; the walk enters them)."""
    listed = set(git_lines(root, "ls-files", "-z", "-co", "--exclude-standard"))
    force_added = set(git_lines(root, "ls-files", "-z", "-ci", "--exclude-standard"))
    deleted = set(git_lines(root, "ls-files", "-z", "-d"))
    stages = git_lines(root, "ls-files", "-z", "-s")
    nested = {s.split("\t", 1)[1] + "/" for s in stages if s.startswith("160000 ")}
    nested |= {p for p in listed if p.endswith("/")}
    want = sorted(p for p in listed - force_added - deleted if not p.startswith(tuple(nested)))
    scanned = [p for p in WorkTree(root, None).list() if not p.startswith(tuple(nested))]
    assert sorted(set(scanned) ^ set(want))[:20] == []
    assert len(scanned) == len(want)


def git_lines(root: Path, *args: str) -> list[str]:
    return [os.fsdecode(p) for p in git(root, *args).split(b"\0") if p]

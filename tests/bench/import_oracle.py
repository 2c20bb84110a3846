"""Python import edges of the graph against an independent oracle: Python's own rules.

    python -m tests.bench.import_oracle [--corpus django|sympy|both]

The oracle reads every .py file with `ast` (not tree-sitter), takes every Import and
ImportFrom at any nesting (functions, ``if TYPE_CHECKING:``, ``try:``), and resolves
each to files of the tree by Python's module resolution with the corpus root as the
only ``sys.path`` entry: module ``a.b`` is ``a/b.py`` or ``a/b/__init__.py``;
``from a import b`` is module ``a.b`` when that exists, else a name in ``a``'s file;
``from a import *`` is ``a``'s file; relative levels count from the importer's package
(an ``__init__.py`` is its own package). ``import a.b.c`` counts as an edge to
``a/b/c``'s file only (the parent packages Python also runs are not edges), and an
import of the importer itself is no edge (the graph draws none). Modules outside the
tree (the standard library, third parties) are not edges.

Gazetteer's edges: IMPORTS edges from a .py file to a ``file:`` node of a full build
(`RepoIndex` over a full scan's events, the real parser). Files `ast` cannot parse are
left out of both sets. Each false positive and false negative is explained from the
import records at its line: not extracted, resolved elsewhere (and where), external.
"""

from __future__ import annotations

import argparse
import ast
import posixpath
from collections import Counter
from dataclasses import dataclass
from typing import Any

from deploy.logging_setup import configure_logging
from processors.graph.bindings import bindings
from processors.graph.lookup import Lookup
from processors.indexer import RepoIndex
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.package_tree import CORPORA, PackageTree, build_index, package_tree

NAME = "import_oracle"
LISTED = 30  # false positives and negatives listed in the JSON, each

Edge = tuple[str, str]


@dataclass(frozen=True, slots=True)
class OracleImport:
    importer: str
    line: int
    nested: bool  # not at module level
    targets: tuple[str, ...]


class PythonOracle:
    """Python's import resolution over a fixed set of .py files under one root."""

    def __init__(self, py_files: set[str]) -> None:
        self.files = py_files

    def module_file(self, stem: str) -> str | None:
        """The file of module ``a/b``: ``a/b.py``, else the package's ``a/b/__init__.py``."""
        if not stem:
            return None  # the root is no package
        for candidate in (f"{stem}.py", f"{stem}/__init__.py"):
            if candidate in self.files:
                return candidate
        return None

    def imports(self, path: str, tree: ast.Module) -> list[OracleImport]:
        top = {id(node) for node in tree.body}
        return [
            OracleImport(path, node.lineno, id(node) not in top, self.resolve(path, node))
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
        ]

    def resolve(self, importer: str, node: ast.Import | ast.ImportFrom) -> tuple[str, ...]:
        found: list[str | None] = []
        if isinstance(node, ast.Import):
            found = [self.module_file(a.name.replace(".", "/")) for a in node.names]
        else:
            stem = self._from_stem(importer, node)
            if stem is None:
                return ()
            for alias in node.names:
                sub = self.module_file(f"{stem}/{alias.name}" if stem else alias.name)
                found.append(sub if alias.name != "*" and sub else self.module_file(stem))
        return tuple(sorted({f for f in found if f is not None and f != importer}))

    @staticmethod
    def _from_stem(importer: str, node: ast.ImportFrom) -> str | None:
        module = (node.module or "").replace(".", "/")
        if not node.level:
            return module
        package = posixpath.dirname(importer)
        for _ in range(node.level - 1):
            package = posixpath.dirname(package)
        if not package:
            return None  # beyond the top-level package
        return posixpath.join(package, module) if module else package


def oracle_edges(tree: PackageTree) -> tuple[dict[str, list[OracleImport]], list[str]]:
    oracle = PythonOracle(set(tree.py_files))
    found: dict[str, list[OracleImport]] = {}
    unparsable = []
    for path in tree.py_files:
        try:
            module = ast.parse(tree.files[path], filename=path)
        except (SyntaxError, ValueError):
            unparsable.append(path)
            continue
        found[path] = oracle.imports(path, module)
    return found, unparsable


def gazetteer_edges(index: RepoIndex, importers: set[str]) -> set[Edge]:
    return {
        (src[5:], dst[5:])
        for src, dst, kind in index.state.edges
        if kind == "IMPORTS" and dst.startswith("file:") and src[5:] in importers
    }


class Explainer:
    """Why an edge is in one set and not the other, from the records at its lines."""

    def __init__(self, tree: PackageTree, index: RepoIndex, oracle: dict[str, list[OracleImport]]):
        self.tree, self.index, self.oracle = tree, index, oracle

    def line_text(self, path: str, line: int) -> str:
        lines = self.tree.files[path].decode("utf-8", "replace").splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    def gazetteer_targets(self, path: str, line: int) -> list[str]:
        """Where the graph's resolution sends the file's import records at ``line``."""
        record = self.index.state.files[path]
        at_line = tuple(i for i in record.imports if i.line == line)
        binds = bindings(path, "python", at_line, Lookup(self.index.graph.facts))
        return sorted(
            {f for m in binds.targets for f in m.files}
            | {f"ext:{m.external}" for m in binds.targets if m.external}
        )

    def false_negative(self, edge: Edge) -> dict[str, Any]:
        importer, target = edge
        lines = sorted({i.line for i in self.oracle[importer] if target in i.targets})
        record = self.index.state.files[importer]
        extracted = {i.line for i in record.imports}
        missing = [n for n in lines if n not in extracted]
        got = {n: self.gazetteer_targets(importer, n) for n in lines if n in extracted}
        if missing:
            cause = "import_not_extracted"
        elif any(t.startswith("ext:") for ts in got.values() for t in ts):
            cause = "resolved_as_external"
        elif any(got.values()):
            cause = "resolved_to_other_file"
        else:
            cause = "unresolved"
        return self._row(edge, lines, cause, {"gazetteer_targets": got})

    def false_positive(self, edge: Edge) -> dict[str, Any]:
        importer, target = edge
        record = self.index.state.files[importer]
        lines = sorted(
            {i.line for i in record.imports if target in self.gazetteer_targets(importer, i.line)}
        )
        oracle = {i.line: list(i.targets) for i in self.oracle[importer] if i.line in lines}
        if not lines:
            cause = "no_import_record_resolves_there"
        elif not oracle:
            cause = "oracle_has_no_import_at_line"
        elif any(oracle.values()):
            cause = "oracle_resolves_elsewhere"
        else:
            cause = "oracle_finds_no_module_file"
        return self._row(edge, lines, cause, {"oracle_targets": oracle})

    def _row(self, edge: Edge, lines: list[int], cause: str, extra: dict) -> dict[str, Any]:  # type: ignore[type-arg]
        importer, target = edge
        statements = {n: self.line_text(importer, n) for n in lines}
        return {
            "importer": importer,
            "target": target,
            "cause": cause,
            "lines": statements,
            **extra,
        }


def bench_corpus(name: str) -> dict[str, Any]:
    tree = package_tree(name)
    progress(f"{name} {tree.version}: {len(tree.py_files)} .py files; building the graph")
    index, _ = build_index(tree)
    oracle, unparsable = oracle_edges(tree)
    expected = {(i.importer, t) for imports in oracle.values() for i in imports for t in i.targets}
    actual = gazetteer_edges(index, set(oracle))
    tp, fp, fn = expected & actual, sorted(actual - expected), sorted(expected - actual)
    precision = len(tp) / len(actual) if actual else 0.0
    recall = len(tp) / len(expected) if expected else 0.0
    explain = Explainer(tree, index, oracle)
    false_positives = [explain.false_positive(e) for e in fp]
    false_negatives = [explain.false_negative(e) for e in fn]
    statements = [i for imports in oracle.values() for i in imports]
    top_level = {p.split("/", 1)[0] for p in tree.files}
    internal_as_external = sorted(
        (src[5:], dst)
        for src, dst, kind in index.state.edges
        if kind == "IMPORTS" and dst.startswith("ext:") and dst[4:] in top_level
    )
    progress(f"{name}: precision {precision:.3f}, recall {recall:.3f}")
    return {
        "corpus": {"name": name, "version": tree.version, "py_files": len(tree.py_files)},
        "unparsable_by_ast": unparsable,
        "import_statements": len(statements),
        "nested_import_statements": sum(1 for i in statements if i.nested),
        "oracle_edges": len(expected),
        "gazetteer_edges": len(actual),
        "true_positives": len(tp),
        "false_positives": len(fp),
        "false_negatives": len(fn),
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "false_positive_causes": dict(Counter(r["cause"] for r in false_positives)),
        "false_negative_causes": dict(Counter(r["cause"] for r in false_negatives)),
        "false_positive_examples": false_positives[:LISTED],
        "false_negative_examples": false_negatives[:LISTED],
        "internal_package_as_external": {
            "count": len(internal_as_external),
            "examples": internal_as_external[:LISTED],
        },
    }


def report(results: dict[str, dict[str, Any]]) -> str:
    keys = ["import_statements", "oracle_edges", "gazetteer_edges", "true_positives"]
    keys += ["false_positives", "false_negatives", "precision", "recall", "f1"]
    rows = [[f"{n} {r['corpus']['version']}", *(r[k] for k in keys)] for n, r in results.items()]
    causes = [
        [f"{n} {r['corpus']['version']}", side, cause, count]
        for n, r in results.items()
        for side in ("false_positive", "false_negative")
        for cause, count in sorted(r[f"{side}_causes"].items())
    ]
    externals = [
        f"{n}: {r['internal_package_as_external']['count']} IMPORTS edges from a file of the "
        "tree to an external module named like the tree's own top-level package "
        f"(examples in the JSON: {r['internal_package_as_external']['examples'][:2]})"
        for n, r in results.items()
    ]
    return "\n\n".join(
        [
            "Python IMPORTS file->file edges against the ast oracle:",
            harness.markdown_table(["corpus", *keys], rows),
            "Causes of the differences:",
            harness.markdown_table(["corpus", "side", "cause", "edges"], causes or [["-"] * 4]),
            "\n".join(externals),
        ]
    )


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", choices=(*CORPORA, "both"), default="django")
    args = cli.parse_args()
    configure_logging("warning")
    names = CORPORA if args.corpus == "both" else (args.corpus,)
    results = {name: bench_corpus(name) for name in names}
    print(report(results))
    progress(f"wrote {harness.write_json(NAME, {'benchmark': NAME, 'results': results})}")


if __name__ == "__main__":
    main()

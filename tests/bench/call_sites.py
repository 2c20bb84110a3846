"""Call sites of a real code base, drawn to measure the recall of CALLS edges by hand.

The recall mode of `call_sample` (``--sample-sites N``): from the same full build, N call
references of the Python files are drawn at random (seeded), N/4 of each form of call
(`FORMS`), and each is laid out with the CALLS edges its caller has to a callee of that
name. Whether the call reaches a definition of the repository, and which one, is
decided by hand and kept in ``call_recall_verdicts.json`` (keyed by `Site.id`); the
recall is then computed against the current graph, so a resolver change shows in it.

Only Python is drawn: nine in ten of django's JavaScript calls are in its vendored,
partly minified libraries (jQuery, select2, XRegExp), not code to read call by call.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from processors.graph.lookup import Lookup
from processors.graph.resolver import FileResolver
from processors.indexer import RepoIndex
from stores.projections.ids import file_id, symbol_id
from stores.records import FileRecord, ReferenceRecord
from tests.bench import harness
from tests.bench.package_tree import PackageTree

FORMS = ("bare", "self", "imported", "other")
FORM_LABELS = {
    "bare": "bare `f()`",
    "self": "`self.f()`, `cls.f()`, `super().f()`",
    "imported": "`mod.f()`, `Imported.f()` (head bound by an import)",
    "other": "`obj.f()`, `obj.attr.f()`, `self.attr.f()`, `expr().f()`",
}
SITE_LANGUAGES = frozenset({"python"})
CATEGORIES = {"a": "in the repository", "b": "outside", "c": "undecidable statically"}
STRUCTURAL = frozenset({"import", "same_file", "same_folder"})
VERDICTS = Path(__file__).with_name("call_recall_verdicts.json")
LINE_CHARS = 140
_SUPER = re.compile(r"super\([^()]*\)\.\s*$")


@dataclass(frozen=True, slots=True)
class Site:
    """One call reference; its id names it across builds: path, line, column, name."""

    path: str
    ref: ReferenceRecord
    form: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.ref.line}:{self.ref.column}:{self.ref.name}"


def call_form(record: FileRecord, ref: ReferenceRecord, line: str) -> str:
    """Which of `FORMS` the call is written in. ``super().f()`` is told apart by the
    text before the name on its line, whatever its qualifier (``super``, or ``<expr>``
    for ``super(Other, self).f()`` and before the parser recorded ``super``), so that the
    forms, and the seeded draw the verdicts were given for, stay as they were."""
    qualifier = ref.qualifier
    if qualifier is None:
        return "bare"
    if qualifier in ("self", "cls") or (
        qualifier in ("<expr>", "super") and _SUPER.search(line[: ref.column])
    ):
        return "self"
    imported = {imp.alias for imp in record.imports} | {
        local for imp in record.imports for local, _ in imp.bindings()
    }
    return "imported" if qualifier.split(".", 1)[0] in imported else "other"


def all_sites(tree: PackageTree, index: RepoIndex) -> dict[str, list[Site]]:
    """Every call reference of the drawn languages, by form, in id order."""
    by_form: dict[str, list[Site]] = {form: [] for form in FORMS}
    for path, record in sorted(index.state.files.items()):
        if record.language not in SITE_LANGUAGES:
            continue
        lines = tree.files[path].decode("utf-8", "replace").splitlines()
        for ref in record.references:
            if ref.kind == "call":
                form = call_form(record, ref, lines[ref.line - 1])
                by_form[form].append(Site(path, ref, form))
    for sites in by_form.values():
        sites.sort(key=lambda s: (s.path, s.ref.line, s.ref.column, s.ref.name))
    return by_form


def draw_sites(by_form: dict[str, list[Site]], count: int, seed: int) -> list[Site]:
    """``count`` sites, an even share of each form (seeded), each form in id order."""
    rng = random.Random(seed)
    drawn: list[Site] = []
    for i, form in enumerate(FORMS):
        share = count // len(FORMS) + (1 if i < count % len(FORMS) else 0)
        pool = by_form[form]
        picked = rng.sample(range(len(pool)), min(share, len(pool)))
        drawn += [pool[j] for j in sorted(picked)]
    return drawn


def caller_node(index: RepoIndex, site: Site) -> str:
    """The node the build draws the site's edges from (as build.py's ``_source``)."""
    if site.ref.scope:
        sid = symbol_id(site.path, site.ref.scope)
        if sid in index.state.nodes:
            return sid
    return file_id(site.path)


def calls_by_caller(index: RepoIndex) -> dict[str, list[tuple[str, str]]]:
    """(callee, confidence) of every CALLS edge, by caller, in callee order."""
    calls: dict[str, list[tuple[str, str]]] = {}
    for (src, dst, kind), edge in sorted(index.state.edges.items()):
        if kind == "CALLS":
            calls.setdefault(src, []).append((dst, edge.confidence or ""))
    return calls


def describe_site(
    tree: PackageTree, index: RepoIndex, calls: dict[str, list[tuple[str, str]]], site: Site
) -> dict[str, Any]:
    """The site as written and the CALLS edges of its caller to a callee of its name, or
    to what this very reference resolves to (``own``; the others come from another call
    of that name in the same caller, e.g. ``a.f()`` beside ``b.f()``)."""
    ref, src = site.ref, caller_node(index, site)
    resolver = FileResolver(index.graph.facts.files[site.path], Lookup(index.graph.facts))
    own = {t.node for t in resolver.resolve(ref)}
    edges = [
        {"callee": dst, "confidence": confidence, "own": dst in own}
        for dst, confidence in calls.get(src, [])
        if dst in own or dst.rsplit(":", 1)[-1].rsplit(".", 1)[-1] == ref.name
    ]
    line = tree.files[site.path].decode("utf-8", "replace").splitlines()[ref.line - 1]
    return {
        "id": site.id,
        "form": site.form,
        "path": site.path,
        "line": ref.line,
        "caller": ref.scope or "(module level)",
        "caller_node": src,
        "written": f"{ref.qualifier}.{ref.name}" if ref.qualifier else ref.name,
        "text": line.strip()[:LINE_CHARS],
        "edges": edges,
        "recursive": src in own,
    }


# -- verdicts and the recall they give --------------------------------------------


def load_verdicts(path: Path = VERDICTS) -> dict[str, dict[str, Any]]:
    return json.loads(path.read_text())["verdicts"] if path.exists() else {}


def judge(
    calls: dict[str, list[tuple[str, str]]], row: dict[str, Any], verdict: dict[str, Any]
) -> dict[str, Any]:
    """The verdict against the current graph: is there a CALLS edge from the caller to
    the right definition (recursion counts: the build never draws that edge), with what
    confidence, and which wrong edges this reference was resolved to instead."""
    right = verdict.get("target")
    node = f"sym:{right}" if right else None
    hit = next((c for dst, c in calls.get(row["caller_node"], []) if dst == node), None)
    present = verdict["category"] == "a" and (hit is not None or node == row["caller_node"])
    confidence = hit if hit else ("recursion" if present else None)
    wrong = [e["callee"] for e in row["edges"] if e["own"] and e["callee"] != node]
    return {"present": present, "confidence": confidence, "wrong": wrong}


def recall(rows: list[dict[str, Any]], population: Counter[str]) -> dict[str, Any]:
    """Per form: the sites of each category, and of (a) those with an edge to the right
    definition (any confidence, then import/same_file/same_folder only); overall, on the
    sample as drawn and weighted by each form's share of all call sites (the forms were
    drawn evenly, not in proportion). Then why (a) edges are missing or only name
    matches, the (c) sites with a likely target, and the verdicts the graph disagrees with."""
    table: dict[str, Any] = {}
    for form in (*FORMS, "all"):
        mine = [r for r in rows if form in (r["form"], "all")]
        a = [r for r in mine if r["verdict"]["category"] == "a"]
        found = [r for r in a if r["judged"]["present"]]
        strong = [r for r in found if r["judged"]["confidence"] in STRUCTURAL | {"recursion"}]
        table[form] = {
            "sites": len(mine),
            **{c: sum(r["verdict"]["category"] == c for r in mine) for c in CATEGORIES},
            "found": len(found),
            "found_structural": len(strong),
            "recall": len(found) / len(a) if a else None,
            "recall_structural": len(strong) / len(a) if a else None,
        }
    for key in ("recall", "recall_structural"):
        # Stratified estimate: each form's (a) sites stand for population * share of (a).
        weights = {
            f: population[f] * table[f]["a"] / table[f]["sites"] for f in FORMS if table[f]["a"]
        }
        total = sum(weights.values())
        table["all"][f"{key}_weighted"] = (
            sum(w * table[f][key] for f, w in weights.items()) / total if total else None
        )
    weak = [
        r
        for r in rows
        if r["verdict"]["category"] == "a" and r["judged"]["confidence"] not in STRUCTURAL
    ]
    table["causes"] = sorted(
        Counter(
            (
                r["verdict"].get("cause", "?"),
                "missed" if not r["judged"]["present"] else "name_match",
            )
            for r in weak
            if r["judged"]["confidence"] != "recursion"
        ).items()
    )
    likely = [r for r in rows if r["verdict"]["category"] == "c" and r["verdict"].get("target")]
    table["c_likely"] = len(likely)
    table["c_likely_found"] = sum(
        any(e["callee"] == f"sym:{r['verdict']['target']}" for e in r["edges"]) for r in likely
    )
    table["drift"] = [
        r["id"]
        for r in rows
        if r["verdict"]["category"] == "a" and r["verdict"].get("edge") != r["judged"]["confidence"]
    ]
    return table


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The 95% Wilson score interval of a proportion (a dozen sites is a wide one)."""
    if not n:
        return None
    p, zz = hits / n, z * z
    centre, half = p + zz / (2 * n), z * math.sqrt(p * (1 - p) / n + zz / (4 * n * n))
    return (centre - half) / (1 + zz / n), (centre + half) / (1 + zz / n)


def _interval(hits: int, n: int) -> str:
    bounds = wilson(hits, n)
    return "n/a" if bounds is None else f"{bounds[0]:.0%} to {bounds[1]:.0%}"


def recall_markdown(table: dict[str, Any], population: Counter[str]) -> str:
    header = ["form", "call sites", "sampled", "(a) in repo", "edge to it", "recall"]
    header += ["95% interval", "structural only", "(b) outside", "(c) undecidable"]
    rows = []
    for form in (*FORMS, "all"):
        t = table[form]
        rows.append(
            [
                FORM_LABELS.get(form, "**all** (as sampled)"),
                f"{population[form] if form != 'all' else sum(population.values()):,}",
                t["sites"],
                t["a"],
                t["found"],
                _pct(t["recall"]),
                _interval(t["found"], t["a"]),
                f"{t['found_structural']} ({_pct(t['recall_structural'])})",
                t["b"],
                t["c"],
            ]
        )
    everything = table["all"]
    lines = [
        "",
        f"Weighted by each form's share of the call sites: recall "
        f"{_pct(everything['recall_weighted'])}, structural only "
        f"{_pct(everything['recall_structural_weighted'])}.",
        "",
        "(a) sites without a structural edge, by cause: "
        + "; ".join(f"{cause} ({how}) {n}" for (cause, how), n in table["causes"])
        + ".",
        "",
        f"(c) sites with a likely target in the repository: {table['c_likely']}, "
        f"with an edge to it: {table['c_likely_found']}.",
    ]
    if table["drift"]:
        lines += [
            "",
            "The graph now differs from the recorded edge at: " + ", ".join(table["drift"]),
        ]
    return harness.markdown_table(header, rows) + "\n" + "\n".join(lines) + "\n"


def sites_markdown(
    name: str, version: str, seed: int, rows: list[dict[str, Any]], population: Counter[str]
) -> str:
    header = ["#", "site", "form", "caller", "call as written", "CALLS edges named like it"]
    header += ["verdict"]
    table = []
    for i, r in enumerate(rows, 1):
        edges = "; ".join(
            f"`{e['callee'][4:]}` ({e['confidence']}{'' if e['own'] else ', another call'})"
            for e in r["edges"]
        )
        verdict = r.get("verdict")
        if verdict is None:
            cell = ""
        elif verdict["category"] != "a":
            cell = f"({verdict['category']})"
        else:
            found = r["judged"]["confidence"] or "MISSED"
            cell = f"(a) `{verdict['target']}`: {found}"
        table.append(
            [
                i,
                f"{r['path']}:{r['line']}",
                r["form"],
                f"`{r['caller']}`",
                f"`{r['written']}`: " + _code(r["text"]),
                edges or "none",
                cell,
            ]
        )
    intro = [
        f"# Call sites of {name} {version}, sampled to measure the recall of CALLS edges",
        "",
        f"{len(rows)} Python call sites, seed {seed}, an even share of each form of call "
        f"(of {sum(population.values()):,}: "
        + ", ".join(f"{f} {population[f]:,}" for f in FORMS)
        + "). Verdict: (a) the call reaches a definition of the repository (which one, "
        "and the confidence of the edge to it, or MISSED), (b) a definition outside it, "
        "(c) undecidable statically. Verdicts: `tests/bench/call_recall_verdicts.json`.",
        "",
        "",
    ]
    return "\n".join(intro) + harness.markdown_table(header, table) + "\n"


def _code(text: str) -> str:
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def attach_verdicts(
    calls: dict[str, list[tuple[str, str]]],
    rows: list[dict[str, Any]],
    verdicts: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """The rows that have a verdict, each with it and its judgement added."""
    judged = []
    for row in rows:
        verdict = verdicts.get(row["id"])
        if verdict is not None:
            row["verdict"] = verdict
            row["judged"] = judge(calls, row, verdict)
            judged.append(row)
    return judged

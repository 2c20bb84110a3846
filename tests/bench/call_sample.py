"""A sample of CALLS edges of a real code base, laid out to be checked by hand.

    python -m tests.bench.call_sample [--sample-calls 60] [--corpus django]
    python -m tests.bench.call_sample --sample-sites 140 [--corpus django]

From a full build of the corpus (the real parser), K CALLS edges are drawn at random
(seeded), stratified by confidence (import, same_file, same_folder, name_match: K/4
each, or all of a smaller stratum). Each row: the calling symbol (file and line range,
or the file at module level), the line of the call (the reference record of the
caller's file with the caller's scope and the callee's name, or the local name it was
imported under), and the callee (file, line, signature), with a blank "correct?"
column. Written to ``out/call_sample.md`` (and JSON beside it); no score is computed.

With ``--sample-sites N``, the recall mode (see `call_sites`): N call sites drawn instead
of edges, each with the CALLS edges its caller has to a callee of its name, written to
``out/call_sites.md`` (and JSON); the recall table is printed from the verdicts kept in
``call_recall_verdicts.json`` for the sites drawn.
"""

from __future__ import annotations

import argparse
import builtins
import random
from collections import Counter
from typing import Any

from deploy.logging_setup import configure_logging
from processors.indexer import RepoIndex
from stores.records import FileRecord, ReferenceRecord
from tests.bench import call_sites, harness
from tests.bench.harness import progress
from tests.bench.package_tree import CORPORA, PackageTree, build_index, package_tree

NAME = "call_sample"
SEED = 20240101
STRATA = ("import", "same_file", "same_folder", "name_match")
LINE_CHARS = 140
BUILTIN_NAMES = frozenset(dir(builtins)) | frozenset(
    name for kind in (list, dict, set, str, bytes, tuple, int, float) for name in dir(kind)
)


def split_symbol(node_id: str) -> tuple[str, str | None]:
    """(path, qualname) of ``sym:path:qualname``; (path, None) of ``file:path``."""
    if node_id.startswith("file:"):
        return node_id[5:], None
    path, qualname = node_id[4:].split(":", 1)
    return path, qualname


def draw(index: RepoIndex, count: int, seed: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    by_confidence: dict[str, list[tuple[str, str, str]]] = {c: [] for c in STRATA}
    for key, edge in sorted(index.state.edges.items()):
        if edge.kind == "CALLS" and edge.confidence in by_confidence:
            by_confidence[edge.confidence].append(key)
    shares = _shares(count, {c: len(pool) for c, pool in by_confidence.items()})
    drawn = []
    for confidence in STRATA:
        drawn += sorted(rng.sample(by_confidence[confidence], shares[confidence]))
    return drawn


def _shares(count: int, sizes: dict[str, int]) -> dict[str, int]:
    """An even split of ``count`` over the strata; what a small one cannot take goes to
    the others (django has no same_folder CALLS: Python resolves none that way)."""
    shares = dict.fromkeys(sizes, 0)
    left = min(count, sum(sizes.values()))
    while left:
        open_ = [c for c in sizes if shares[c] < sizes[c]]
        for i, c in enumerate(open_):
            take = min(
                left // len(open_) + (1 if i < left % len(open_) else 0), sizes[c] - shares[c]
            )
            shares[c] += take
        left = min(count, sum(sizes.values())) - sum(shares.values())
    return shares


def name_match_census(index: RepoIndex) -> dict[str, Any]:
    """CALLS name_match edges, and those to a callee named like a builtin or a method of
    a builtin type (``super()``, ``errors.append()``): most of those calls are the
    builtin's, not the repository's definition."""
    names = [
        split_symbol(dst)[1] or ""
        for (_, dst, kind), edge in index.state.edges.items()
        if kind == "CALLS" and edge.confidence == "name_match"
    ]
    builtin_like = [n.rsplit(".", 1)[-1] for n in names if n.rsplit(".", 1)[-1] in BUILTIN_NAMES]
    return {
        "name_match_calls": len(names),
        "callee_named_like_a_builtin": len(builtin_like),
        "most_common": sorted(Counter(builtin_like).items(), key=lambda kv: (-kv[1], kv[0]))[:15],
    }


def call_references(record: FileRecord, scope: str | None, name: str) -> list[ReferenceRecord]:
    """The caller's call references to ``name`` (or a local name bound to it)."""
    names = {name}
    for imp in record.imports:
        names.update(local for local, imported in imp.bindings() if imported == name)
    return [
        ref
        for ref in record.references
        if ref.kind == "call" and ref.scope == scope and ref.name in names
    ]


def describe(tree: PackageTree, index: RepoIndex, key: tuple[str, str, str]) -> dict[str, Any]:
    src, dst, _ = key
    edge = index.state.edges[key]
    caller_path, caller = split_symbol(src)
    callee_path, callee = split_symbol(dst)
    source = index.state.nodes[src]
    target = index.state.nodes[dst]
    name = (callee or "").rsplit(".", 1)[-1]
    refs = call_references(index.state.files[caller_path], caller, name)
    lines = tree.files[caller_path].decode("utf-8", "replace").splitlines()
    signature = next(
        (s.signature for s in index.state.files[callee_path].symbols if s.qualname == callee), ""
    )
    return {
        "confidence": edge.confidence,
        "weight": edge.weight,
        "caller": caller or "(module level)",
        "caller_path": caller_path,
        "caller_lines": [source.line_start, source.line_end],
        "call_lines": [r.line for r in refs],
        "call_text": lines[refs[0].line - 1].strip()[:LINE_CHARS] if refs else "",
        "call_written": f"{refs[0].qualifier}.{refs[0].name}"
        if refs and refs[0].qualifier
        else (refs[0].name if refs else ""),
        "callee": callee,
        "callee_path": callee_path,
        "callee_line": target.line_start,
        "callee_signature": signature,
    }


def _code(text: str) -> str:
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`" if text else "(none found)"


def markdown(name: str, version: str, rows: list[dict[str, Any]], census: dict[str, Any]) -> str:
    header = ["#", "confidence", "caller", "call site", "callee", "callee signature", "correct?"]
    table = []
    for i, r in enumerate(rows, 1):
        first, last = r["caller_lines"]
        more = len(r["call_lines"]) - 1
        site = (
            f"line {r['call_lines'][0]}: {_code(r['call_text'])}"
            if r["call_lines"]
            else ("(no call reference with that name in the caller's scope)")
        )
        if more > 0:
            site += f" (+{more} more: lines {', '.join(map(str, r['call_lines'][1:6]))})"
        table.append(
            [
                i,
                r["confidence"],
                f"{_code(r['caller'])} in {r['caller_path']}:{first}-{last}",
                site,
                f"{_code(r['callee'])} at {r['callee_path']}:{r['callee_line']}",
                _code(r["callee_signature"]),
                "",
            ]
        )
    intro = [
        f"# CALLS edges of {name} {version}, sampled for checking by hand",
        "",
        f"{len(rows)} edges, seed {SEED}, stratified by confidence. A row is correct when "
        "the call on the call-site line, run as written, reaches the callee "
        "(a method reached through an instance's class counts).",
        "",
        f"Of the graph's {census['name_match_calls']} name_match CALLS edges, "
        f"{census['callee_named_like_a_builtin']} go to a callee named like a builtin or a "
        "method of a builtin type (most common: "
        + ", ".join(f"{n} {c}" for n, c in census["most_common"][:8])
        + ").",
        "",
        "",
    ]
    return "\n".join(intro) + harness.markdown_table(header, table) + "\n"


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", choices=CORPORA, default="django")
    cli.add_argument("--sample-calls", type=int, default=60, metavar="K")
    cli.add_argument("--sample-sites", type=int, default=0, metavar="N", help="recall mode")
    args = cli.parse_args()
    configure_logging("warning")
    tree = package_tree(args.corpus)
    progress(f"{args.corpus} {tree.version}: building the graph")
    index, _ = build_index(tree)
    if args.sample_sites:
        sample_sites(args.corpus, tree, index, args.sample_sites)
        return
    rows = [describe(tree, index, key) for key in draw(index, args.sample_calls, SEED)]
    census = name_match_census(index)
    text = markdown(args.corpus, tree.version, rows, census)
    print(text)
    harness.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (harness.OUT_DIR / f"{NAME}.md").write_text(text)
    payload = {"benchmark": NAME, "corpus": args.corpus, "version": tree.version, "rows": rows}
    payload["name_match_census"] = census
    progress(f"wrote {harness.OUT_DIR / f'{NAME}.md'} and {harness.write_json(NAME, payload)}")


def sample_sites(corpus: str, tree: PackageTree, index: RepoIndex, count: int) -> None:
    """The recall mode: sites drawn, laid out, and scored where verdicts exist."""
    by_form = call_sites.all_sites(tree, index)
    population = Counter({form: len(sites) for form, sites in by_form.items()})
    calls = call_sites.calls_by_caller(index)
    rows = [
        call_sites.describe_site(tree, index, calls, site)
        for site in call_sites.draw_sites(by_form, count, SEED)
    ]
    judged = call_sites.attach_verdicts(calls, rows, call_sites.load_verdicts())
    text = call_sites.sites_markdown(corpus, tree.version, SEED, rows, population)
    payload: dict[str, Any] = {"benchmark": "call_sites", "corpus": corpus, "seed": SEED}
    payload |= {"version": tree.version, "population": population, "rows": rows}
    if judged:
        table = call_sites.recall(judged, population)
        text += f"\n## Recall ({len(judged)} of {len(rows)} sites judged)\n\n"
        text += call_sites.recall_markdown(table, population)
        payload["recall"] = table
    print(text)
    harness.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (harness.OUT_DIR / "call_sites.md").write_text(text)
    json_path = harness.write_json("call_sites", payload)
    progress(f"wrote {harness.OUT_DIR / 'call_sites.md'} and {json_path}")


if __name__ == "__main__":
    main()

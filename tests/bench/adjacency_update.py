"""What one edit costs the adjacency, folded against rebuilt, and a context pack right after.

    python -m tests.bench.adjacency_update [--corpus django] [--edits 40] [--hubs 6]

The corpus (a package's wheel, `package_tree`) is scanned in process (RepoIndex), its
deltas folded into a ReadModel, reclustered. Then ``--edits`` watch edits, seeded: half
append a function to a Python file (a new symbol, a call of one of the file's functions,
an import of ``django.conf`` or the first module the file imports: an edge into a
hub), the other half put those files back (the same edges removed again); ``--hubs``
more do the same to the most imported files (whose lists are the longest). Each edit's
delta is folded by the read model, whose adjacency is live (issue 15), and measured:

- ``fold`` — `ReadModel.apply_delta`, the adjacency included;
- ``adjacency update`` — `Adjacency.apply` of the same delta on a twin adjacency of
  the same state (what the fold spends on the adjacency);
- ``rebuild`` — `Adjacency.of(state)`, what the first answer after the edit paid before
  (and again with the garbage collector paused: its passes over the heap are most of it);
- ``pack after edit, folded`` / ``rebuilt`` — the first ``context(path=...)`` answer
  after the edit, by the QueryService as it is and by one whose `_adjacency` rebuilds
  per state version as before (its StateCache); the order of the two alternates.

Reported: p50 / p95 / max in ms, and the live adjacency checked equal to a rebuild at the
end. One process, one thread; the machine's other core is shared, so absolute numbers
are noisy (compare within one run).
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Callable
from typing import Any

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.read_model import ReadModel, RepoView
from query.search.adjacency import Adjacency
from query.service import QueryService
from stores.projections.graph_state import FileGraphState
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.package_tree import package_tree, scan_events
from tests.factories import Stamp

NAME = "adjacency_update"


class RebuildingService(QueryService):
    """The query service as before issue 15's change: the adjacency built again, once
    per state version, by the first answer that needs it."""

    def _adjacency(self, view: RepoView) -> Adjacency:
        return self._cache.get(view, "adjacency", lambda: Adjacency.of(view.state))


def ms(call: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    value = call()
    return (time.perf_counter() - started) * 1000, value


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {"p50": at(0.5), "p95": at(0.95), "max": ordered[-1], "n": len(ordered)}


def edited(text: str, index: int) -> str | None:
    """The file with a function appended: it imports a module the file already imports
    (or django.conf) and calls the file's first function."""
    lines = text.splitlines()
    first = next((ln[4:].split("(")[0] for ln in lines if ln.startswith("def ")), None)
    if first is None:
        return None
    module = next(
        (ln.split()[1] for ln in lines if ln.startswith("from ") and " import " in ln),
        "django.conf",
    )
    return (
        f"{text.rstrip()}\n\n\ndef _bench_edit_{index}():\n"
        f"    from {module} import *  # noqa\n    return {first}()\n"
    )


def run(corpus: str, count: int, seed: int, hubs: int) -> dict[str, Any]:
    tree = package_tree(corpus)
    stamp = Stamp(repo=corpus)
    index, model = RepoIndex(corpus), ReadModel()
    events = scan_events(tree.files, stamp)
    progress(f"{corpus}: indexing {len(events)} events")
    for event in events:
        delta = index.handle(event, time.time())
        if delta is not None:
            model.apply_delta(delta)
    view = model.view(corpus)
    model.apply_snapshot(
        recluster(FileGraphState.of(view.state), None, ReclusterSettings(), now=time.time())
    )
    state = view.state
    progress(f"{len(state.files)} files, {len(state.nodes)} nodes, {len(state.edges)} edges")
    rng = random.Random(seed)
    python = sorted(p for p in tree.files if p.endswith(".py") and p in state.files)
    chosen: list[tuple[str, str, str]] = []
    for path in rng.sample(python, len(python)):
        text = tree.files[path].decode("utf-8", "replace")
        changed = edited(text, len(chosen))
        if changed is not None:
            chosen.append((path, text, changed))
        if len(chosen) * 2 >= count:
            break
    # And the files most imported (the hubs): their edits rebuild the longest lists.
    live = view.adjacency()
    for path in sorted(python, key=lambda p: (-live.inbound(p), p))[:hubs]:
        text = tree.files[path].decode("utf-8", "replace")
        changed = edited(text, len(chosen))
        if changed is not None and all(path != p for p, _, _ in chosen):
            chosen.append((path, text, changed))
    plan = [(p, new) for p, _, new in chosen] + [(p, old) for p, old, _ in chosen]
    new_service, old_service = QueryService(model), RebuildingService(model)
    # `live` stays the view's from here on, as after the first pack of a running service
    twin = Adjacency.of(state)
    gc.collect()
    times: dict[str, list[float]] = {
        k: []
        for k in (
            "fold (ReadModel.apply_delta)",
            "adjacency update (Adjacency.apply)",
            "rebuild (Adjacency.of)",
            "rebuild, gc paused",
            "pack after edit, folded",
            "pack after edit, rebuilt",
        )
    }
    sizes = []
    for i, (path, text) in enumerate(plan):
        delta = index.handle(stamp.changed(path, text), time.time())
        assert delta is not None
        sizes.append(len(delta.edges_upserted) + len(delta.edges_removed))
        before = twin.before(delta)
        times["fold (ReadModel.apply_delta)"].append(ms(lambda: model.apply_delta(delta))[0])  # noqa: B023
        times["adjacency update (Adjacency.apply)"].append(ms(lambda: twin.apply(delta, before))[0])  # noqa: B023
        times["rebuild (Adjacency.of)"].append(ms(lambda: Adjacency.of(state))[0])
        gc.disable()
        times["rebuild, gc paused"].append(ms(lambda: Adjacency.of(state))[0])
        gc.enable()
        services = [("folded", new_service), ("rebuilt", old_service)]
        for name, service in services if i % 2 == 0 else reversed(services):
            spent, _ = ms(lambda: service.context(corpus, path=path, budget=8000))  # noqa: B023
            times[f"pack after edit, {name}"].append(spent)
    fresh, live = Adjacency.of(state), view.adjacency()
    same = (
        live.degrees == fresh.degrees
        and live.names == fresh.names
        and live.hub_threshold == fresh.hub_threshold
        and live.edges is fresh.edges is state.edges
        and all(
            live.edges_out(n) == fresh.edges_out(n) and live.edges_in(n) == fresh.edges_in(n)
            for n in sorted(state.nodes)[::50]
        )
    )
    return {
        "corpus": corpus,
        "version": tree.version,
        "files": len(state.files),
        "nodes": len(state.nodes),
        "edges": len(state.edges),
        "edits": len(plan),
        "edges_changed_per_edit": summary([float(s) for s in sizes]),
        "live_equals_rebuild": same,
        "ms": {k: summary(v) for k, v in times.items()},
    }


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--corpus", default="django")
    cli.add_argument("--edits", type=int, default=40)
    cli.add_argument("--seed", type=int, default=15)
    cli.add_argument("--hubs", type=int, default=6, help="edits of the most imported files")
    args = cli.parse_args()
    result = run(args.corpus, args.edits, args.seed, args.hubs)
    rows = [
        [k, f"{v['p50']:.2f}", f"{v['p95']:.2f}", f"{v['max']:.2f}"]
        for k, v in result["ms"].items()
    ]
    print(harness.markdown_table(["ms", "p50", "p95", "max"], rows))
    sizes = result["edges_changed_per_edit"]
    print(f"{result['corpus']} {result['version']}: {result['files']} files, "
          f"{result['nodes']} nodes, {result['edges']} edges; {result['edits']} edits, "
          f"edges changed per edit p50 {sizes['p50']:.0f} max {sizes['max']:.0f}; "
          f"live adjacency equals a rebuild: {result['live_equals_rebuild']}")  # fmt: skip
    payload = {"benchmark": NAME, "machine": harness.machine(), "options": vars(args), **result}
    progress(f"wrote {harness.write_json(NAME + '_' + args.corpus, payload)}")


if __name__ == "__main__":
    main()

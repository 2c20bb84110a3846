"""Impact (issue 20): given a unified diff, a list of changed files or a list of changed
symbols, what depends on them (direct and transitive, by confidence), which tests
exercise them, which neighborhoods and entry points they touch, and a short risk
summary (the pure core: query/search/impact.py and unified_diff.py).

Bounded twice: ``limit`` dependents and tests listed at most, then the whole answer
within ``budget_tokens`` (chars/4), the longest list trimmed from its end first, down to
one item a list; ``left_out`` says how many of each list were left out, and the totals
stay true. Every answer is fresh-stamped as navigation's are.

Refusals: none or two of diff, files, symbols (422); a malformed diff, a path outside
the repository or one the index does not hold (400, every such path named); a symbol
no definition matches (404, navigation's refusal): query/service/impact_input.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from query.impact_schemas import (
    ChangedFileOut,
    ChangedSymbolOut,
    DependentOut,
    ImpactAnswer,
    NeighborhoodTouchedOut,
    RiskOut,
    TestOut,
)
from query.search import impact as core
from query.search.adjacency import Adjacency
from query.search.impact_risk import RULE, Touched, assess, neighborhoods_touched
from query.search.unified_diff import spans
from query.service.base import ServiceBase
from query.service.errors import InvalidArguments
from query.service.impact_input import diff_changes, file_changes, symbol_changes
from query.service.navigation import node_out
from stores.projections.ids import is_test_path, path_of, symbol_id

MAX_DEPENDENTS = 1000
"""Dependents a walk reaches at most (then ``dependents_capped``)."""
LISTS = ("dependents", "tests", "changed_symbols", "neighborhoods", "changed_files")
"""The lists the budget trims, the first of the longest first."""
NEW_FILE = "new file: nothing indexed depends on it"


class ImpactAnswers(ServiceBase):
    def impact(
        self,
        repo: str,
        diff: str | None = None,
        files: list[str] | None = None,
        symbols: list[str] | None = None,
        depth: int = 2,
        budget_tokens: int = 4000,
        limit: int = 50,
    ) -> ImpactAnswer:
        """What a change touches: the changed files and symbols, what depends on them
        within ``depth`` hops (each with its hop and the weakest confidence on its
        path), the tests exercising them, the neighborhoods and entry points touched,
        and a risk level with the rule it follows; within ``budget_tokens``."""
        view = self.view(repo)
        given = [name for name, v in (("diff", diff), ("files", files), ("symbols", symbols)) if v]
        if len(given) != 1:
            raise InvalidArguments("give exactly one of diff, files, symbols")
        adjacency = self._adjacency(view)
        if diff:
            changes = diff_changes(view, diff)
        elif files:
            changes = file_changes(view, files)
        else:
            changes = symbol_changes(view, adjacency, symbols or [])
        starts = list(dict.fromkeys(s for c in changes for s in c.starts))
        found, capped = core.dependents(adjacency, starts, depth=depth, max_nodes=MAX_DEPENDENTS)
        changed = [c.path for c in changes if c.indexed]
        tests = core.tests_of(adjacency, changed, found)
        code = [d for d in found if not is_test_path(path_of(d.node) or "")]
        snapshot = view.neighborhoods
        membership = snapshot.membership() if snapshot else {}
        reached = {p for d in code if (p := path_of(d.node)) is not None}
        touched = neighborhoods_touched(snapshot, changed, reached) if snapshot else ()
        lists: dict[str, list[Any]] = {
            "changed_files": [_file_out(c) for c in changes],
            "changed_symbols": [
                ChangedSymbolOut(
                    **node_out(adjacency, symbol_id(c.path, s.qualname)).model_dump(),
                    qualname=s.qualname,
                    exported=s.exported,
                )
                for c in changes
                for s in c.symbols
            ],
            "dependents": [_dependent_out(adjacency, d, membership) for d in code[:limit]],
            "tests": [TestOut(path=t.path, link=t.link, hop=t.hop, of=t.of) for t in tests[:limit]],
            "neighborhoods": [_touched_out(t) for t in touched],
        }
        answer = ImpactAnswer(
            repo=repo,
            depth=depth,
            changed_files=[],
            changed_symbols=[],
            dependents=[],
            dependents_total=len(code),
            dependents_capped=capped,
            tests=[],
            tests_total=len(tests),
            neighborhoods=[],
            risk=_risk(changes, code, core.untested(adjacency, changes, found), membership),
            left_out={},
            budget_tokens=budget_tokens,
            tokens=0,
            freshness=self.model.freshness(repo),
        )
        left_out = {"dependents": len(code) - min(len(code), limit)}
        left_out["tests"] = len(tests) - min(len(tests), limit)
        return within_budget(answer, lists, left_out, budget_tokens)


def _risk(
    changes: Sequence[core.Change],
    code: Sequence[core.Dependent],
    untested: Sequence[str],
    membership: Mapping[str, str],
) -> RiskOut:
    """`assess` of the non-test dependents (``code``): those in neighborhoods that
    hold no changed file, and those of a deleted or renamed file."""
    mine = {membership[c.path] for c in changes if c.path in membership}
    homes = [membership.get(path_of(d.node) or "") for d in code]
    elsewhere = [home for home in homes if home is not None and home not in mine]
    removed = {c.path for c in changes if c.status in ("deleted", "renamed")}
    broken = sorted({p for d in code if (p := path_of(d.root)) in removed})
    direct = sum(1 for d in code if d.hop == 1)
    risk = assess(
        direct=direct,
        transitive=len(code) - direct,
        elsewhere=len(elsewhere),
        other_neighborhoods=len(set(elsewhere)),
        untested=untested,
        broken=broken,
    )
    return RiskOut(
        level=risk.level,
        rule=RULE,
        reasons=list(risk.reasons),
        direct=direct,
        transitive=len(code) - direct,
        other_neighborhoods=len(elsewhere),
        untested=list(untested),
    )


def _dependent_out(
    adjacency: Adjacency, dep: core.Dependent, membership: Mapping[str, str]
) -> DependentOut:
    return DependentOut(
        **node_out(adjacency, dep.node).model_dump(),
        hop=dep.hop,
        confidence=dep.confidence,
        via=dep.via,
        edge_kind=dep.kind,
        changed=dep.root,
        hub=adjacency.is_hub(dep.node),
        neighborhood=membership.get(path_of(dep.node) or ""),
    )


def _touched_out(touched: Touched) -> NeighborhoodTouchedOut:
    return NeighborhoodTouchedOut(
        id=touched.id,
        label=touched.label,
        changed=touched.changed,
        dependents=touched.dependents,
        entry_points=list(touched.entry_points),
        entry_points_touched=list(touched.entry_points_touched),
    )


def within_budget(
    answer: ImpactAnswer,
    lists: dict[str, list[Any]],
    left_out: dict[str, int],
    budget: int,
) -> ImpactAnswer:
    """``answer`` with ``lists`` in it, the longest trimmed from its end (the first of
    `LISTS` on a tie) while the whole is over ``budget`` tokens and it has more than one
    item; ``left_out`` counts what ``limit`` left out before."""
    costs = {name: [_tokens(item) for item in items] for name, items in lists.items()}
    used = _tokens(answer) + 30 + sum(sum(c) for c in costs.values())  # 30: left_out itself
    kept = {name: len(items) for name, items in lists.items()}
    while used > budget:
        name = max(LISTS, key=lambda n: (kept[n], -LISTS.index(n)))
        if kept[name] <= 1:
            break
        kept[name] -= 1
        used -= costs[name][kept[name]]
    for name in LISTS:
        left_out[name] = left_out.get(name, 0) + len(lists[name]) - kept[name]
    trimmed = answer.model_copy(
        update={
            **{name: lists[name][: kept[name]] for name in LISTS},
            "left_out": {name: n for name, n in left_out.items() if n},
        }
    )
    return trimmed.model_copy(update={"tokens": _tokens(trimmed)})


def _tokens(model: BaseModel) -> int:
    return -(-len(model.model_dump_json()) // 4)


def _file_out(change: core.Change) -> ChangedFileOut:
    return ChangedFileOut(
        path=change.path,
        status=change.status,
        new_path=change.new_path if change.new_path != change.path else None,
        lines=[f"L{a}" if a == b else f"L{a}-{b}" for a, b in spans(change.lines)],
        whole=change.whole,
        module_level=change.module_level,
        indexed=change.indexed,
        note=None if change.indexed else NEW_FILE,
    )

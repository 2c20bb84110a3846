"""The query verbs that answer for one repository or for many (issue 18): ``search``,
``context``, ``session-start`` and ``graph-search`` (their arguments: deploy/cli.py).

``gazetteer search REPO QUESTION`` asks ``/repositories/REPO/search``; with ``--all``
(every repository the token may read) or ``--repos 'svc-*,shared'`` the question comes
alone and the verb asks the org-wide route (``/search?repos=...``) of a replica or of a
router (`gazetteer route`): the same arguments, the same token, the lines of each hit
led by its repository. Each org-wide answer's footer says who answered it (a router's
shards and those missing, a replica's partitions) and ``PARTIAL`` when some repositories
could not be searched (a shard down, a replica still loading): never silently.

An org-wide scope that holds no repository (a glob that matches none, or only
repositories the token may not read: the two are one answer, issue 19) exits 2 with
the reason, as an unknown repository does; the same with the answer partial exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deploy import query_cli
from query.service_client import QueryError


@dataclass(frozen=True, slots=True)
class Scope:
    """What a verb asks about: one repository (``repo``), or several (``repo`` None:
    ``repos`` the patterns, None for every one), and the verb's text (its question,
    message or names; None for ``context``, whose text is ``--q``)."""

    repo: str | None
    repos: str | None
    text: str | None

    @property
    def org(self) -> bool:
        return self.repo is None

    def said(self) -> str:
        return f"--repos {self.repos!r}" if self.repos is not None else "--all"


class Unscoped(ValueError):
    """The arguments name no scope, or two."""


def scope_of(args: argparse.Namespace, *, text: bool = True) -> Scope:
    """The scope of the parsed arguments. ``text``: the verb takes a positional text
    after the repository (``REPO QUESTION``, or ``QUESTION`` alone org-wide)."""
    repos = getattr(args, "repos", None)
    org = bool(getattr(args, "all", False)) or repos is not None
    if repos is not None and not repos.replace(",", "").strip():
        raise Unscoped("--repos: give ids, names or globs ('svc-*,shared'); --all for every one")
    if not text:
        if org and args.repo is not None:
            raise Unscoped(f"with --all or --repos name no repository (not {args.repo!r})")
        if not org and args.repo is None:
            raise Unscoped("give the repository, or --all or --repos PATTERNS")
        return Scope(None if org else args.repo, repos, None)
    if org:
        if args.question is not None:
            raise Unscoped("with --all or --repos give the text alone, not a repository")
        return Scope(None, repos, args.repo)
    if args.question is None:
        raise Unscoped("give the repository and the text, or --all or --repos PATTERNS")
    return Scope(args.repo, None, args.question)


def _scoped(verb: str, args: argparse.Namespace, *, text: bool = True) -> Scope | None:
    try:
        return scope_of(args, text=text)
    except Unscoped as exc:
        print(f"gazetteer {verb}: {exc}", file=sys.stderr)
        return None


def who_answered(answer: Mapping[str, Any]) -> str:
    """A router's shards (and those missing) or a replica's partitions, and PARTIAL."""
    if "shards" in answer:
        said = f"shards {', '.join(answer['shards']) or 'none'}"
        if answer["missing"]:
            said += f"; missing shards {', '.join(answer['missing'])}"
    else:
        said = f"partitions {answer.get('partitions', '?')}"
    if answer["partial"]:
        said += "; PARTIAL: some repositories were not searched (a shard down or loading)"
    return said


def statuses(freshness: Mapping[str, Mapping[str, Any]]) -> str:
    """The index freshness of the repositories shown: ``2 fresh, 1 updating``."""
    counts: dict[str, int] = {}
    for seen in freshness.values():
        counts[seen["status"]] = counts.get(seen["status"], 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none shown"


def repositories(n: int) -> str:
    return "1 repository" if n == 1 else f"{n} repositories"


def _ask(verb: str, args: argparse.Namespace, scope: Scope, path: str, params: dict) -> Any:
    """The org-wide answer (a JSON object), or the exit code once the refusal is printed
    (2: refused or unreachable, 1: the service failed)."""
    try:
        return query_cli.ask(args, path, {**params, "repos": scope.repos})
    except QueryError as exc:
        return query_cli.refused(verb, exc)


def _empty(verb: str, scope: Scope, answer: Mapping[str, Any]) -> int | None:
    """Exit 2 (1 when partial) for a scope that held no repository, else None."""
    if answer["repositories"]:
        return None
    none = f"none matches {scope.said()}" if scope.repos is not None else "none is indexed"
    print(
        f"gazetteer {verb}: no repository to ask: {none} (or none this token may read);"
        f" {who_answered(answer)}",
        file=sys.stderr,
    )
    return 1 if answer["partial"] else 2


def _hit(hit: Mapping[str, Any], repo: bool) -> str:
    signals = " ".join(f"{k}={v:.3g}" for k, v in hit["signals"].items() if v)
    where = f"{hit['repo']}  " if repo else ""
    return f"{where}{hit['path']}:{hit['read']}  {hit['score']:.4f}  {signals}"


def search(args: argparse.Namespace) -> int:
    scope = _scoped("search", args)
    if scope is None:
        return 2
    if not scope.org:
        return query_cli.search(args)
    page = _ask("search", args, scope, "/search", {"q": scope.text, "limit": args.limit})
    if isinstance(page, int):
        return page
    if (empty := _empty("search", scope, page)) is not None:
        return empty
    for hit in page["items"]:
        print(_hit(hit, repo=True))
    shown = {h["repo"]: h["freshness"] for h in page["items"]}
    print(
        f"# {len(page['items'])} of {page['candidates']} files from"
        f" {repositories(page['repositories'])}; index {statuses(shown)};"
        f" {who_answered(page)}",
        file=sys.stderr,
    )
    return 0


def context(args: argparse.Namespace) -> int:
    scope = _scoped("context", args, text=False)
    if scope is None:
        return 2
    if not scope.org:
        return query_cli.context(args)
    if args.q is None or args.symbol is not None or args.path is not None:
        print("gazetteer context: an org-wide pack is asked with --q alone", file=sys.stderr)
        return 2
    asked = {"q": args.q, "budget": args.budget, "seeds": args.seeds}
    pack = _ask("context", args, scope, "/context", asked)
    if isinstance(pack, int):
        return pack
    if (empty := _empty("context", scope, pack)) is not None:
        return empty
    print(pack["text"])
    shown = {s["repo"]: s["freshness"] for s in pack["sections"]}
    print(
        f"# {pack['tokens']} of {pack['budget']} tokens from {len(pack['sections'])} of"
        f" {repositories(pack['repositories'])}; confidence {pack['confidence']};"
        f" index {statuses(shown)}; {who_answered(pack)}",
        file=sys.stderr,
    )
    return 0


def session_start(args: argparse.Namespace) -> int:
    """Where to start: the neighborhoods the first message falls in, each with its
    entry points and matched files (and, org-wide, its repository)."""
    scope = _scoped("session-start", args)
    if scope is None:
        return 2
    asked = {"q": scope.text, "top": args.top, "hits": args.hits, "matched": args.matched}
    if scope.org:
        answer = _ask("session-start", args, scope, "/session-start", asked)
    else:
        answer = query_cli.navigate("session-start", args, "session-start", asked)
    if answer is None or isinstance(answer, int):
        return 2 if answer is None else answer
    if scope.org and (empty := _empty("session-start", scope, answer)) is not None:
        return empty
    for n in answer["neighborhoods"]:
        where = f"{n['repo']}  " if scope.org else ""
        print(
            f"{where}{n['label']}  {n['score']:.4f}  {n['size']} files,"
            f" cohesion {n['cohesion']:.2f}  [{n['id']}]"
        )
        for entry in n["entry_points"]:
            print(f"  entry {entry}")
        for hit in n["matched"]:
            print(f"  {_hit(hit, repo=False)}")
    listed = f"# {len(answer['neighborhoods'])} of {answer['total']} neighborhoods"
    if scope.org:
        shown = {n["repo"]: n["freshness"] for n in answer["neighborhoods"]}
        about = f"index {statuses(shown)}; {who_answered(answer)}"
        print(
            f"{listed} from {repositories(answer['repositories'])}; {about}",
            file=sys.stderr,
        )
    else:
        print(f"{listed}; index {answer['freshness']['status']}", file=sys.stderr)
    return 0


def graph_search(args: argparse.Namespace) -> int:
    """Names, words or a glob in seven channels, each with its true total."""
    scope = _scoped("graph-search", args)
    if scope is None:
        return 2
    asked = {
        "q": scope.text,
        "channels": args.channels,
        "prefix": args.prefix,
        "glob": args.glob,
        "offset": args.offset,
        "limit": args.limit,
    }
    if scope.org:
        page = _ask("graph-search", args, scope, "/graph-search", asked)
    else:
        page = query_cli.navigate("graph-search", args, "graph-search", asked)
    if page is None or isinstance(page, int):
        return 2 if page is None else page
    if scope.org and (empty := _empty("graph-search", scope, page)) is not None:
        return empty
    for channel in page["channels"]:
        print(f"[{channel['channel']}] {len(channel['items'])} of {channel['total']}")
        for h in channel["items"]:
            where = f"{h['repo']}  " if scope.org else ""
            lines = f":L{h['line_start']}-{h['line_end']}" if h["line_start"] else ""
            print(f"  {where}{h['path']}{lines}  {h['text']}  {h['match']}  {h['score']:.3g}")
    if scope.org:
        about = f"index {statuses(page['freshness'])}; {who_answered(page)}"
        print(f"# {repositories(page['repositories'])}; {about}", file=sys.stderr)
    else:
        print(f"# index {page['freshness']['status']}", file=sys.stderr)
    return 0

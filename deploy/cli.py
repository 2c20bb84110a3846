"""The ``gazetteer`` command: ``up`` runs everything; the other verbs run one part each."""

from __future__ import annotations

# First, before anything slow: a Ctrl-C while the verb's modules import is remembered.
from deploy import ctrl_c  # isort: split

import argparse
import gc
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deploy.settings import Settings

QUERY_URL = "http://127.0.0.1:8765"
"""Where the query verbs (``search``, ``context``, ``mcp``) ask by default: ``up``'s port."""

PEERS = ("bm25", "none")
"""``eval localize --peer``: `deploy.eval_peer.PEERS` (tests/unit/test_cli_imports.py keeps
them equal; that module imports the search core, which ``--help`` does not need)."""


@dataclass(frozen=True, slots=True)
class Verb:
    """A verb and what running it takes. This module and the parser import nothing but the
    standard library; ``target`` ("module:function") is imported only when the verb runs
    (issue 20: importing every verb's machinery made ``gazetteer --help`` take 3.3 s and
    delayed every process ``up`` starts and every ``search`` by 2.6 s)."""

    target: str
    settings: bool = True
    """Builds the process's Settings and configures logging; the function takes both
    ``(args, settings)``. The query verbs that only print an answer take ``(args)``."""
    broker: bool = False
    """Refuses to run without ``--broker``."""
    dense: bool = False
    """Refuses dense retrieval settings that cannot work together."""
    service: bool = False
    """Runs until stopped: a Ctrl-C is a requested stop (exit 0)."""
    exposed: bool = False
    """Serves HTTP: refuses a non-loopback address without authentication or
    ``--insecure`` (issue 19)."""

    def load(self) -> Callable[..., int]:
        module, function = self.target.split(":")
        return getattr(importlib.import_module(module), function)  # type: ignore[no-any-return]


VERBS: Mapping[str, Verb] = {
    "up": Verb("deploy.up:main", dense=True, service=True, exposed=True),
    "worker": Verb("deploy.worker_part:main", broker=True, dense=True, service=True),
    "watch": Verb("deploy.sources_part:main", broker=True, service=True),
    "serve": Verb("deploy.query_part:main", broker=True, dense=True, service=True, exposed=True),
    "route": Verb("deploy.route_part:main", service=True, exposed=True),
    "broker": Verb("deploy.up:broker_main", service=True),
    "eval": Verb("deploy.eval_cli:run"),
    "ranking": Verb("deploy.ranking_cli:run"),
    "token": Verb("deploy.token_cli:run"),
    "mcp": Verb("deploy.mcp_cli:main"),
    "search": Verb("deploy.org_cli:search", settings=False),
    "context": Verb("deploy.org_cli:context", settings=False),
    "session-start": Verb("deploy.org_cli:session_start", settings=False),
    "graph-search": Verb("deploy.org_cli:graph_search", settings=False),
    "definition": Verb("deploy.query_cli:definition", settings=False),
    "references": Verb("deploy.query_cli:edges", settings=False),
    "callers": Verb("deploy.query_cli:edges", settings=False),
    "callees": Verb("deploy.query_cli:edges", settings=False),
    "path": Verb("deploy.query_cli:path", settings=False),
    "neighbors": Verb("deploy.query_cli:neighbors", settings=False),
    "impact": Verb("deploy.impact_cli:impact", settings=False),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gazetteer", description=__doc__)
    parser.add_argument("--broker", help="embedded (default) or kafka://host:port")
    parser.add_argument("--log-format", choices=("console", "json"))
    parser.add_argument("--log-level")
    # Hidden: how `up` starts its parts (deploy/up.py). The pid of the supervisor, which
    # the part outlives by no more than a stop (deploy/child_process.py); and a port on
    # loopback for a part's metrics, which the query part's /metrics shows.
    parser.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--metrics-loopback-port", type=int, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="index and follow repositories; serve queries")
    up.add_argument("paths", nargs="+", type=Path)
    up.add_argument("--port", type=int, help="query service port (0: any free port)")
    up.add_argument("--host", help="query service address (default 127.0.0.1)")
    _exposure_arguments(up)
    sub.add_parser("worker", help="run one indexing worker (needs --broker)")
    watch = sub.add_parser("watch", help="scan, watch and follow repositories (needs --broker)")
    watch.add_argument("paths", nargs="+", type=Path)
    serve = sub.add_parser("serve", help="run one query service replica (needs --broker)")
    serve.add_argument("--port", type=int)
    serve.add_argument("--host")
    serve.add_argument(
        "--partitions", help="serve only these partitions' repositories, e.g. 0-3,8 (a shard)"
    )
    serve.add_argument("--shard", help="serve shard INDEX of COUNT (INDEX/COUNT), e.g. 1/4")
    _exposure_arguments(serve)
    # Hidden, for `up`: serve on the socket it bound, log its progress lines, and show
    # the metrics of the other parts (PART=URL).
    serve.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--progress", action="store_true", help=argparse.SUPPRESS)
    serve.add_argument("--metrics-peer", action="append", default=[], help=argparse.SUPPRESS)
    route = sub.add_parser("route", help="one address in front of sharded query replicas")
    route.add_argument(
        "--shard",
        dest="shards",
        action="append",
        required=True,
        help="a shard and its replicas: PARTITIONS=URL[,URL...] (0-3=http://a:8765) or "
        "INDEX/COUNT=URL[,URL...]; one per shard, every partition in exactly one",
    )
    route.add_argument("--port", type=int)
    route.add_argument("--host")
    _exposure_arguments(route)
    sub.add_parser("broker", help="run the embedded broker alone and print its address")
    _eval_parser(sub)
    _ranking_parser(sub)
    _token_parser(sub)
    _query_parsers(sub)
    return parser


def _exposure_arguments(verb: argparse.ArgumentParser) -> None:
    verb.add_argument(
        "--auth",
        action="store_true",
        default=None,
        help="ask a token of every request (GAZETTEER_AUTH=on; `gazetteer token create`)",
    )
    verb.add_argument(
        "--insecure",
        action="store_true",
        default=None,
        help="serve a non-loopback --host without authentication (refused otherwise)",
    )


def _eval_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``gazetteer eval``: measure retrieval on a benchmark (``localize``), score its
    ranked functions (``functions``) and fit the ranking weights on what it measured
    (``tune``; ``learn``: the defaults off Python, on every split pooled); run by
    deploy/eval_cli.py."""
    evaluate = sub.add_parser("eval", help="measure retrieval on a benchmark")
    tasks = evaluate.add_subparsers(dest="task", required=True)
    localize = tasks.add_parser(
        "localize", help="rank files for real issues; write predictions score.py reads"
    )
    localize.add_argument("--dataset", type=Path, required=True, help="instances, JSON lines")
    localize.add_argument(
        "--repos", type=Path, required=True, help="holds <owner>__<name>__<sha12>/ per instance"
    )
    localize.add_argument("--out", type=Path, required=True, help="predictions, JSON lines")
    localize.add_argument("--limit", type=int, help="only the first N instances")
    localize.add_argument(
        "--embedder", help="add the dense signal: default, hash:256, onnx:..., st:..., openai:..."
    )
    localize.add_argument(
        "--peer",
        choices=PEERS,
        default="bm25",
        help="the same-run peer: whole-file BM25 over code-aware tokens (*.peer-bm25.jsonl)",
    )
    functions = tasks.add_parser(
        "functions", help="score the ranked functions of `eval localize` (Acc@1/5/10)"
    )
    functions.add_argument(
        "--dataset", type=Path, required=True, help="instances with gold_functions or gold_patch"
    )
    functions.add_argument(
        "--repos", type=Path, required=True, help="the checkouts `eval localize` read"
    )
    functions.add_argument(
        "predictions", type=Path, nargs="+", help="JSON lines with ranked_functions"
    )
    tune = tasks.add_parser(
        "tune", help="fit the ranking weights on the candidates `eval localize` wrote"
    )
    tune.add_argument("--dataset", type=Path, required=True, help="instances with gold_files")
    tune.add_argument(
        "--signals", type=Path, required=True, help="the *.signals.jsonl of `eval localize`"
    )
    tune.add_argument("--out", type=Path, required=True, help="the ranking profile, JSON")
    learn = tasks.add_parser(
        "learn",
        help="learn the default weights of non-Python files on every split pooled, with "
        "repositories held out (query/search/family_tuning.py)",
    )
    learn.add_argument(
        "--split",
        nargs=2,
        type=Path,
        action="append",
        required=True,
        metavar=("DATASET", "SIGNALS"),
        help="a dataset and the *.signals.jsonl `eval localize` wrote for it (repeat)",
    )
    learn.add_argument("--out", type=Path, required=True, help="the weights and scores, JSON")
    learn.add_argument(
        "--hold",
        action="append",
        metavar="SIGNAL",
        help="keep this signal's weight at its default, 0 for a new one (repeat)",
    )
    learn.add_argument(
        "--learn-python",
        action="append",
        metavar="SIGNAL",
        help="learn this signal's weight on Python files too, Python's others held (repeat)",
    )
    history = tasks.add_parser(
        "history",
        help="add the repository's history (past commits -> files) to `eval localize`'s "
        "signals (deploy/eval_history.py)",
    )
    history.add_argument("--dataset", type=Path, required=True, help="instances, JSON lines")
    history.add_argument(
        "--mirrors", type=Path, required=True, help="holds <owner>+<name>/repo git directories"
    )
    history.add_argument(
        "--signals", type=Path, required=True, help="the *.signals.jsonl of `eval localize`"
    )
    history.add_argument("--out", type=Path, required=True, help="the signals with history")


def _ranking_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``gazetteer ranking set FILE``, run by deploy/ranking_cli.py."""
    ranking = sub.add_parser("ranking", help="store the search weights with the index")
    verbs = ranking.add_subparsers(dest="ranking_verb", required=True)
    put = verbs.add_parser("set", help="publish a ranking profile (needs --broker)")
    put.add_argument("file", type=Path, help="a profile from `eval tune`, or {name: weight}")
    put.add_argument("--repo", help="only this repository (default: every repository)")


def _token_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``gazetteer token create|list|revoke``, run by deploy/token_cli.py."""
    token = sub.add_parser("token", help="the access tokens of the query service")
    verbs = token.add_subparsers(dest="token_verb", required=True)
    create = verbs.add_parser("create", help="make a token; its secret is printed once")
    create.add_argument("--name", required=True, help="who it is for, e.g. ci-agent")
    create.add_argument(
        "--repos", default="*", help="globs on repository ids or names (default '*': all)"
    )
    create.add_argument(
        "--scope",
        action="append",
        choices=("read", "admin", "metrics"),
        required=True,
        help="read (queries), admin (ranking, dead letters), metrics (/metrics); repeatable",
    )
    verbs.add_parser("list", help="the tokens, never their secrets")
    revoke = verbs.add_parser("revoke", help="refuse a token from now on")
    revoke.add_argument("name")


def _query_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The verbs that ask a running query service (``up`` or ``serve``) over HTTP, run by
    deploy/query_cli.py and deploy/mcp_cli.py."""
    url = {"default": QUERY_URL, "help": f"the query service (default {QUERY_URL})"}
    mcp = sub.add_parser("mcp", help="serve the query tools to an agent over MCP (stdio)")
    mcp.add_argument("--url", **url)
    mcp.add_argument(
        "--token",
        help="the bearer token to send (default: GAZETTEER_TOKEN; a process's "
        "environment is less visible than its arguments)",
    )
    search = _scoped_parser(
        sub, "search", "QUESTION", "rank a repository's files for a question, or every one's"
    )
    search.add_argument("--limit", type=int, default=10, help="files to list (default 10)")
    _service_arguments(search, url)
    context = sub.add_parser(
        "context",
        help="print a context pack: the code to read, in budget",
        usage="gazetteer context (REPO | --all | --repos PATTERNS) (--q Q | --symbol S | "
        "--path P) [options]",
    )
    context.add_argument("repo", nargs="?", help="the repository (none with --all, --repos)")
    _org_arguments(context)
    about = context.add_mutually_exclusive_group()
    about.add_argument("--q", help="a question or an issue's text")
    about.add_argument("--symbol", help="a symbol name: 'Session.send'")
    context.add_argument(
        "--path", help="a file's path in the repository; with --symbol, a file or folder to look in"
    )
    context.add_argument("--budget", type=int, default=8000, help="tokens (default 8000)")
    context.add_argument("--seeds", type=int, default=3, help="search hits to start from (--q)")
    _service_arguments(context, url)
    start = _scoped_parser(
        sub, "session-start", "MESSAGE", "where to start: the neighborhoods a message falls in"
    )
    start.add_argument("--top", type=int, default=3, help="neighborhoods (default 3)")
    start.add_argument("--hits", type=int, default=20, help="search hits mapped (default 20)")
    start.add_argument("--matched", type=int, default=5, help="files per neighborhood (5)")
    _service_arguments(start, url)
    graph = _scoped_parser(
        sub, "graph-search", "QUERY", "names, words or a glob in seven channels (symbols, paths…)"
    )
    graph.add_argument("--channels", help="comma-separated (default all): classes,paths,...")
    graph.add_argument("--prefix", help="only files under this path prefix")
    graph.add_argument("--glob", help="only files matching: '**/models.py'")
    graph.add_argument("--offset", type=int, default=0, help="per channel")
    graph.add_argument("--limit", type=int, default=10, help="per channel (default 10)")
    _service_arguments(graph, url)
    _navigation_parsers(sub, url)
    _impact_parser(sub, url)


def _scoped_parser(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    verb: str,
    text: str,
    about: str,
) -> argparse.ArgumentParser:
    """A verb of one repository (``REPO TEXT``) or of several (``TEXT --all``, ``TEXT
    --repos PATTERNS``: issue 18), run by deploy/org_cli.py."""
    parser = sub.add_parser(
        verb,
        help=f"{about} (--all, --repos: across repositories)",
        usage=f"gazetteer {verb} (REPO {text} | {text} --all | {text} --repos PATTERNS) [options]",
    )
    parser.add_argument(
        "repo", metavar="REPO", help=f"the repository (with --all or --repos: the {text})"
    )
    parser.add_argument("question", metavar=text, nargs="?", help="what to ask")
    _org_arguments(parser)
    return parser


def _org_arguments(verb: argparse.ArgumentParser) -> None:
    """An org-wide verb's repositories: every one, or those the patterns name."""
    scope = verb.add_mutually_exclusive_group()
    scope.add_argument(
        "--all", action="store_true", help="every repository (that the token may read)"
    )
    scope.add_argument(
        "--repos",
        metavar="PATTERNS",
        help="a comma list of ids, root names, substrings or globs: 'svc-*,shared'",
    )


def _service_arguments(verb: argparse.ArgumentParser, url: dict[str, Any]) -> None:
    """Where a query verb asks, and with which token (a service with GAZETTEER_AUTH=on)."""
    verb.add_argument("--url", **url)
    verb.add_argument(
        "--token",
        help="the bearer token to send (visible in the process list: prefer mcp's "
        "GAZETTEER_TOKEN for an agent)",
    )


def _navigation_parsers(sub: argparse._SubParsersAction, url: dict[str, Any]) -> None:  # type: ignore[type-arg]
    """Navigation over the code graph (issue 20), run by deploy/query_cli.py."""

    def paged(verb: argparse.ArgumentParser, limit: int) -> None:
        verb.add_argument("--offset", type=int, default=0, help="the page's first item")
        verb.add_argument("--limit", type=int, default=limit, help=f"items (default {limit})")
        _service_arguments(verb, url)

    name = "a symbol name, 'Class.method', or a file's path"
    in_file = "only the symbols defined in this file"
    definition = sub.add_parser("definition", help="where a name is defined")
    definition.add_argument("repo")
    definition.add_argument("name", help="a symbol name or 'Class.method'")
    definition.add_argument("--path", help=in_file)
    paged(definition, 20)
    for verb, what in (
        ("references", "the edges pointing at a symbol"),
        ("callers", "who calls a symbol"),
        ("callees", "what a symbol calls"),
    ):
        edges = sub.add_parser(verb, help=what + ", with each edge's confidence")
        edges.add_argument("repo")
        edges.add_argument("symbol", help=name)
        edges.add_argument("--path", help=in_file)
        paged(edges, 50)
    between = sub.add_parser("path", help="the shortest dependency path between two nodes")
    between.add_argument("repo")
    between.add_argument("source", help=name)
    between.add_argument("target", help=name)
    between.add_argument("--max-hops", type=int, default=8, help="at most 8 (default)")
    _service_arguments(between, url)
    near = sub.add_parser("neighbors", help="the nodes around a symbol or file, hubs skipped")
    near.add_argument("repo")
    near.add_argument("node", help=name)
    near.add_argument("--path", help=in_file)
    near.add_argument("--order", choices=("bfs", "dfs"), default="bfs")
    near.add_argument("--depth", type=int, default=2, help="hops at most (default 2)")
    near.add_argument("--direction", choices=("out", "in", "both"), default="both")
    near.add_argument("--through-hubs", action="store_true", help="walk through hubs too")
    paged(near, 50)


def _impact_parser(sub: argparse._SubParsersAction, url: dict[str, Any]) -> None:  # type: ignore[type-arg]
    """What a change touches (issue 20), run by deploy/impact_cli.py."""
    verb = sub.add_parser(
        "impact", help="what a change touches: dependents, tests, neighborhoods, risk"
    )
    verb.add_argument("repo")
    change = verb.add_mutually_exclusive_group()
    change.add_argument("--diff-range", metavar="A..B", help="git diff A..B in --root")
    change.add_argument("--branch", help="git diff HEAD...BRANCH: the branch since it forked")
    change.add_argument("--diff-file", metavar="PATH", help="a unified diff; '-': stdin")
    change.add_argument("--files", nargs="+", metavar="FILE", help="changed files")
    change.add_argument("--symbols", nargs="+", metavar="NAME", help="'Cls.meth' or 'f.py:name'")
    verb.add_argument(
        "--root",
        default=".",
        help="the checkout git runs in (default: here); by default "
        "the diff is its uncommitted changes against HEAD",
    )
    verb.add_argument("--depth", type=int, default=2, help="hops of dependents (default 2)")
    verb.add_argument("--budget", type=int, default=4000, help="tokens (default 4000)")
    verb.add_argument("--limit", type=int, default=50, help="dependents and tests (default 50)")
    _service_arguments(verb, url)


def _settings(args: argparse.Namespace) -> Settings:
    from deploy.settings import Settings  # pydantic-settings: only for the verbs that use it

    overrides = {
        key: value
        for key, value in {
            "broker": args.broker,
            "log_format": args.log_format,
            "log_level": args.log_level,
            "port": getattr(args, "port", None),
            "host": getattr(args, "host", None),
            "serve_partitions": getattr(args, "partitions", None),
            "shard": getattr(args, "shard", None),
            "auth": getattr(args, "auth", None),
            "insecure": getattr(args, "insecure", None),
        }.items()
        if value is not None
    }
    if getattr(args, "metrics_loopback_port", None) is not None:
        # A part under `up`: its metrics on loopback only; /metrics faces the network.
        overrides.update(metrics_port=args.metrics_loopback_port, host="127.0.0.1")
    return Settings(**overrides)  # type: ignore[arg-type]


def _refused(settings: Settings, verb: Verb) -> str | None:
    """Why these settings cannot run the verb, or None."""
    if verb.broker and settings.bootstrap is None:
        return "needs --broker kafka://host:port"
    if settings.serve_partitions and settings.shard:
        return "name a query replica's --partitions or its --shard, not both"
    if verb.exposed and settings.exposure_refused is not None:
        return settings.exposure_refused
    if verb.dense:
        from deploy.dense_check import DenseSetupError, check_dense_settings

        try:
            check_dense_settings(settings)
        except DenseSetupError as exc:
            return str(exc)
    return None


GC_THRESHOLDS = (50_000, 20, 100)
"""The graph of a large repository is millions of small objects; with the default
thresholds the collector took a third of a django graph build (1.5 of 5.7 s) and
paused a single sympy edit for 2.3 s (tests/bench/graph_build.py)."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    verb = VERBS[args.command]
    given: tuple[Any, ...] = (args,)
    if verb.settings:
        from deploy.logging_setup import configure_logging

        settings = _settings(args)
        # A part under `up` says which on each line (`--parent-pid`: deploy/up.py).
        part = args.command if args.parent_pid is not None else None
        configure_logging(settings.log_level, settings.log_format, part=part)
        refused = _refused(settings, verb)
        if refused is not None:
            print(f"gazetteer {args.command}: {refused}", file=sys.stderr)
            return 2
        given = (args, settings)
    gc.set_threshold(*GC_THRESHOLDS)
    run = verb.load()
    if verb.service and ctrl_c.requested():
        return 0  # Ctrl-C while importing: nothing was started, nothing to stop
    if not verb.service:
        ctrl_c.restore()
    try:
        return run(*given)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

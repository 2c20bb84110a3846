"""A real query service over a read model fed with real deltas, on a loopback port.

The HTTP API and its MCP endpoint are built and mounted as ``run_query`` builds them;
only the read side is fed here (RepoIndex deltas and a recluster) instead of from the
topics, so the MCP and CLI tests need no broker.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn

from deploy.listener import listen
from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.api import create_api
from query.host_check import host_rule
from query.mcp_http import mount_mcp
from query.read_model import ReadModel
from query.request_limits import RequestLimits
from stores.projections.graph_state import FileGraphState
from tests.factories import Stamp
from tests.unit.test_retrieval_api import FILES

# The repository the HTTP unit tests search: the same answers over MCP and the CLI.


def indexed_model() -> ReadModel:
    """``app-1`` indexed and clustered; ``lib-2`` indexed, not clustered yet."""
    model = ReadModel(clock=lambda: 1002.0)
    feed(model, "app-1", FILES, clustered=True)
    feed(model, "lib-2", {"lib/util.py": "def helper():\n    return 1\n"}, clustered=False)
    return model


def feed(model: ReadModel, repo: str, files: dict[str, str], *, clustered: bool) -> None:
    index, stamp = RepoIndex(repo), Stamp(repo)
    events = [stamp.changed(p, t, origin="scan") for p, t in files.items()]
    for event in [stamp.claim(), *events, stamp.scan_completed("c1")]:
        delta = index.handle(event, now=1000.0)
        assert delta is not None
        model.apply_delta(delta)
    if clustered:
        model.apply_snapshot(
            recluster(FileGraphState.of(index.state), None, ReclusterSettings(), now=1001.0)
        )


@contextmanager
def query_service(
    model: ReadModel,
    limits: RequestLimits | None = None,
    *,
    authenticate: bool = False,
    ready: Callable[[], bool] = lambda: True,
) -> Iterator[str]:
    """Serve the API with MCP at /mcp in a background thread, with ``limits`` when
    given (`run_query` passes the settings'); yields its URL. ``authenticate``: tokens
    asked, of the model's token book (issue 19). ``ready``: whether the read side has
    caught up (a replica still loading says False)."""
    api = create_api(
        model,
        ready=ready,
        hosts=host_rule("127.0.0.1"),
        limits=limits,
        authenticate=authenticate,
    )
    endpoint = mount_mcp(api)
    sock = listen("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(api, log_config=None, access_log=False))

    async def serve() -> None:
        async with endpoint.run():
            await server.serve(sockets=[sock])

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started or not thread.is_alive():
                break
            threading.Event().wait(0.05)
        assert server.started, "the query service did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)

"""``gazetteer route``: the router in front of sharded query replicas (issue 18).

    gazetteer route --shard 0-3=http://10.0.0.5:8765,http://10.0.0.6:8765 \
                    --shard 4-7=http://10.0.0.7:8765 [--port 8764] [--host 127.0.0.1]

Every partition of the topics (``GAZETTEER_PARTITIONS``, the deployment's) must be
served by exactly one shard; the router holds no state (`query/router.py`).
"""

from __future__ import annotations

import argparse
import asyncio

import httpx
import structlog
import uvicorn

from deploy.listener import listen
from deploy.parts import run_part, stop_on_signals
from deploy.quiet_server import QuietServer
from deploy.settings import Settings
from query.host_check import host_rule
from query.router import (
    TIMEOUT_S,
    Router,
    ShardReplicas,
    check_cover,
    create_router_app,
    parse_shard_spec,
)

log = structlog.get_logger(__name__)


def main(args: argparse.Namespace, settings: Settings) -> int:
    shards = [parse_shard_spec(spec) for spec in args.shards]
    check_cover(shards, settings.partitions)
    return run_part("route", _route(settings, args, shards))


async def _route(settings: Settings, args: argparse.Namespace, shards: list[ShardReplicas]) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop, args.parent_pid)
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
        router = Router(shards, settings.partitions, client)
        hosts = host_rule(settings.host, settings.allowed_host_names)
        app = create_router_app(
            router, hosts=hosts, limits=settings.request_limits, authenticate=settings.auth
        )
        # The MCP endpoint's task group runs before the first request and until the end.
        async with app.state.mcp.run():
            sock = listen(settings.host, settings.port)
            port = sock.getsockname()[1]
            server = QuietServer(
                uvicorn.Config(
                    app, host=settings.host, port=port, log_config=None, access_log=False
                )
            )
            serving = asyncio.create_task(server.serve(sockets=[sock]))
            while not server.started and not serving.done():
                await asyncio.sleep(0.05)
            url = f"http://{settings.host}:{port}"
            log.info("router_listening", url=url, shards=[s.shard.describe() for s in shards])
            print(f"Gazetteer router on {url}", flush=True)
            stopping = asyncio.ensure_future(stop.wait())
            await asyncio.wait([stopping, serving], return_when=asyncio.FIRST_COMPLETED)
            server.should_exit = True
            stopping.cancel()
            await asyncio.gather(serving, return_exceptions=True)
    log.info("router_stopped")

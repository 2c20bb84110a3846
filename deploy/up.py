"""``gazetteer up``: a supervisor, the embedded broker, and one process per part (issue 15);
and ``gazetteer broker``, the embedded broker alone.

Measured on django with every part on one event loop: with 20 search clients, search
p95 2.4 s and a saved edit visible after 18.6 s, because parsing, barriers and
reclusters ran on the loop that also watched the files and answered HTTP. Now the
producers, the worker and the query service are three children of this process, each
the CLI's own single-part command (``watch``, ``worker``, ``serve``), exactly as a
distributed deployment runs them:

- the broker (embedded Tansu, or ``--broker``) is started here, and restarted on the
  same port if it dies, so the children's bootstrap address stays valid;
- the HTTP socket is bound here (`deploy.listener.listen`: the same port choice and
  fallback as before) and inherited by the query child, so a restarted query process
  serves on the same port and no connection is refused meanwhile;
- the worker and the producers serve their metrics on loopback ports chosen here, and
  the query child's ``/metrics`` shows them with a ``part`` label (query/metrics.py);
- the query child logs the ``index_progressed`` lines ``up`` always showed, and prints
  the URL; this process prints the "Gazetteer is serving" line once it does.

This module imports no faust, FastAPI or tree-sitter: the supervisor starts in a
fraction of a second and answers Ctrl-C at once. The children ensure the topics
themselves (``connect``), as in the distributed layout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import structlog

from deploy import ctrl_c
from deploy.broker_process import LOOPBACK, free_port
from deploy.embedded_broker import EmbeddedBroker
from deploy.listener import listen
from deploy.parts import checked_roots, run_part, stop_on_signals
from deploy.settings import Settings
from deploy.supervisor import ChildSpec, GaveUpError, RestartPolicy, Supervisor

log = structlog.get_logger("gazetteer")

SERVING = "Gazetteer is serving"
T = TypeVar("T")


def main(args: argparse.Namespace, settings: Settings) -> int:
    """``gazetteer up``: 0 after a requested stop, 1 if a part kept crashing."""
    return run_part("up", _up(settings, checked_roots(args.paths)))


def broker_main(args: argparse.Namespace, settings: Settings) -> int:
    """``gazetteer broker``: the embedded broker alone, its address on stdout."""
    return run_part("broker", _broker_alone())


async def _up(settings: Settings, roots: list[Path]) -> int:
    stop = asyncio.Event()
    stop_on_signals(stop)
    if ctrl_c.requested():
        stop.set()
    try:
        await run_up(settings, roots, stop)
    except GaveUpError as error:
        print(f"gazetteer up: {error}", file=sys.stderr)
        return 1
    return 0


async def _broker_alone() -> None:
    stop = asyncio.Event()
    stop_on_signals(stop)
    async with EmbeddedBroker() as broker:
        print(f"kafka://{broker.bootstrap}", flush=True)
        await stop.wait()


def announcement(url: str) -> str:
    return f"{SERVING} {url}  (OpenAPI: {url}/docs; Ctrl-C stops)"


def child_specs(
    settings: Settings,
    *,
    bootstrap: str,
    roots: Sequence[Path],
    listen_fd: int,
    metrics_ports: dict[str, int],
    on_serve_line: Callable[[str], None],
    parent_pid: int,
) -> list[ChildSpec]:
    """The three parts as commands of this CLI (pure: values in, commands out)."""
    base = (
        sys.executable,
        "-m",
        "deploy.cli",
        "--broker",
        f"kafka://{bootstrap}",
        "--parent-pid",
        str(parent_pid),
        "--log-level",
        settings.log_level,
        "--log-format",
        settings.log_format,
    )
    peers = [
        f"{part}=http://{LOOPBACK}:{port}/metrics" for part, port in sorted(metrics_ports.items())
    ]
    serve = (
        *base,
        "serve",
        "--host",
        settings.host,
        "--listen-fd",
        str(listen_fd),
        "--progress",
        *(["--auth"] if settings.auth else []),
        *(["--insecure"] if settings.insecure else []),
        *[arg for peer in peers for arg in ("--metrics-peer", peer)],
    )
    runs = settings.data_dir / "runs"
    # The producers first: their scan starts the pipeline, and each spawn waits for the
    # child's exec (issue 21: 0.1-0.3 s apart on a loaded machine).
    return [
        ChildSpec(
            "watch",
            (
                *base,
                "--metrics-loopback-port",
                str(metrics_ports["watch"]),
                "watch",
                *map(str, roots),
            ),
        ),
        ChildSpec(
            "worker",
            (*base, "--metrics-loopback-port", str(metrics_ports["worker"]), "worker"),
            # A killed worker cannot remove its run directory (deploy.runtime.run_dir).
            leftovers=lambda pid: [runs / f"worker-{pid}"],
        ),
        ChildSpec("serve", serve, pass_fds=(listen_fd,), on_stdout=on_serve_line),
    ]


async def unless_stopped(stop: asyncio.Event, step: Awaitable[T]) -> T | None:
    """``step``'s result, or None (and ``step`` cancelled) if ``stop`` comes first."""
    doing = asyncio.ensure_future(step)
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([doing, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if doing.done():
        return doing.result()
    doing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await doing
    return None


@contextlib.asynccontextmanager
async def _broker(settings: Settings, stop: asyncio.Event) -> AsyncIterator[EmbeddedBroker | None]:
    """The embedded broker while ``up`` runs (None with ``--broker``)."""
    if settings.bootstrap is not None:
        yield None
        return
    broker = EmbeddedBroker()
    try:
        await unless_stopped(stop, broker.start())
        yield broker
    finally:
        await broker.stop()


async def run_up(
    settings: Settings, roots: Sequence[Path], stop: asyncio.Event
) -> Supervisor | None:
    """Run until ``stop``; raises `deploy.supervisor.GaveUpError` if a part keeps
    crashing."""
    # Bound first, so that a port taken (a second `up`) is said in the first lines.
    sock = listen(settings.host, settings.port)
    note = port_note(settings.host, settings.port, sock.getsockname()[1])
    if note is not None:
        print(note, flush=True)
        log.warning("port_taken", preferred=settings.port, port=sock.getsockname()[1])
    try:
        return await _run_up(settings, roots, stop, sock)
    finally:
        sock.close()


def token_note(bootstrap: str) -> str:
    """What `up` with authentication on says after its address: how to make a token."""
    return (
        "Authentication is on: make a token with `gazetteer --broker "
        f"kafka://{bootstrap} token create --name NAME --scope read` (docs/SECURITY.md)."
    )


def port_note(host: str, preferred: int, bound: int) -> str | None:
    """What `up` says when the port asked for was taken and another was bound."""
    if not preferred or bound == preferred:
        return None
    return (
        f"Port {preferred} on {host} is taken (another `gazetteer up`?): "
        f"serving on port {bound} instead."
    )


async def _run_up(
    settings: Settings, roots: Sequence[Path], stop: asyncio.Event, sock: socket.socket
) -> Supervisor | None:
    async with _broker(settings, stop) as broker:
        if stop.is_set():
            return None
        bootstrap = settings.bootstrap or (broker.bootstrap if broker else "")
        url = f"http://{settings.host}:{sock.getsockname()[1]}"
        announced = False

        def on_serve_line(line: str) -> None:
            nonlocal announced
            if line.startswith(SERVING):
                if not announced:
                    announced = True
                    print(announcement(url), flush=True)
                    if settings.auth:
                        print(token_note(bootstrap), flush=True)
                return
            sys.stdout.write(line)
            sys.stdout.flush()

        specs = child_specs(
            settings,
            bootstrap=bootstrap,
            roots=roots,
            listen_fd=sock.fileno(),
            metrics_ports={"worker": free_port(), "watch": free_port()},
            on_serve_line=on_serve_line,
            parent_pid=os.getpid(),
        )
        supervisor = Supervisor(
            specs, policy=RestartPolicy(), check=_broker_check(broker) if broker else None
        )
        await supervisor.run(stop)
        return supervisor


def _broker_check(broker: EmbeddedBroker) -> Callable[[], Awaitable[None]]:
    async def check() -> None:
        if broker.running:
            return
        port, pid = broker.bootstrap.rpartition(":")[2], broker.pid
        log.warning("broker_exited", port=int(port), pid=pid)
        await broker.restart()
        log.info("broker_restarted", port=int(port), pid=broker.pid)

    return check


def inherited_socket(fd: int) -> socket.socket:
    """The listening socket ``up`` bound, in the query child (family and type from the fd)."""
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    return sock

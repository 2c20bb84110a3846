"""The supervisor of ``gazetteer up``: its restart policy (pure) and, on tiny real child
processes, restarts, giving up, and a stop that kills what ignores SIGTERM."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from deploy.settings import Settings
from deploy.supervisor import ChildSpec, GaveUpError, RestartPolicy, Supervisor
from deploy.up import child_specs, port_note, unless_stopped
from tests.e2e.cli import pid_alive

POLICY = RestartPolicy(max_restarts=3, window_s=60.0, backoff_s=0.5, backoff_cap_s=1.5)


def test_the_backoff_doubles_per_recent_exit_up_to_its_cap() -> None:
    assert [POLICY.delay([0.0] * n, now=10.0) for n in (1, 2, 3)] == [0.5, 1.0, 1.5]


def test_more_exits_than_allowed_within_the_window_give_up() -> None:
    assert POLICY.delay([1.0, 2.0, 3.0, 4.0], now=5.0) is None


def test_exits_older_than_the_window_are_forgotten() -> None:
    assert POLICY.delay([0.0, 1.0, 2.0, 100.0], now=100.0) == 0.5


def python(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


FAST = RestartPolicy(max_restarts=2, window_s=60.0, backoff_s=0.01, backoff_cap_s=0.01)


async def test_a_part_that_keeps_crashing_is_given_up_on_with_a_clear_error() -> None:
    supervisor = Supervisor([ChildSpec("crasher", python("raise SystemExit(3)"))], policy=FAST)
    with pytest.raises(GaveUpError) as error:
        await supervisor.run(asyncio.Event())
    assert str(error.value) == (
        "the crasher exited 3 times within 60 s (last exit code 3); stopping"
    )


async def test_a_part_that_refuses_to_run_is_not_started_again() -> None:
    supervisor = Supervisor([ChildSpec("worker", python("raise SystemExit(2)"))], policy=FAST)
    with pytest.raises(GaveUpError) as error:
        await asyncio.wait_for(supervisor.run(asyncio.Event()), 10)
    assert str(error.value) == "the worker refused to run (exit code 2); stopping"


async def test_a_part_that_exits_is_restarted_and_its_leftovers_removed(tmp_path: Path) -> None:
    marker, leftover = tmp_path / "crashed-once", tmp_path / "run-dir"
    leftover.mkdir()
    code = (
        "import pathlib, sys, time\n"
        f"m = pathlib.Path({str(marker)!r})\n"
        "if not m.exists():\n"
        "    m.touch(); sys.exit(1)\n"
        "print('second', flush=True); time.sleep(60)\n"
    )
    lines: list[str] = []
    spec = ChildSpec(
        "flaky", python(code), on_stdout=lines.append, leftovers=lambda pid: [leftover]
    )
    supervisor = Supervisor([spec], policy=FAST)
    stop = asyncio.Event()
    running = asyncio.create_task(supervisor.run(stop))
    first = await _wait_for(lambda: supervisor.pids.get("flaky"))
    await _wait_for(lambda: lines == ["second\n"])
    second = supervisor.pids["flaky"]
    assert second != first and not leftover.exists()
    stop.set()
    await running
    assert not pid_alive(second)


async def test_stop_kills_a_part_that_ignores_sigterm_after_the_grace() -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    lines: list[str] = []
    supervisor = Supervisor(
        [ChildSpec("stubborn", python(code), on_stdout=lines.append)], grace_s=0.5
    )
    stop = asyncio.Event()
    running = asyncio.create_task(supervisor.run(stop))
    await _wait_for(lambda: lines == ["ready\n"])
    pid = supervisor.pids["stubborn"]
    stop.set()
    await running
    assert not pid_alive(pid)


async def test_a_stop_during_a_step_cancels_it() -> None:
    stop = asyncio.Event()
    stop.set()
    assert await unless_stopped(stop, asyncio.sleep(60, "slept")) is None
    assert await unless_stopped(asyncio.Event(), asyncio.sleep(0, "slept")) == "slept"


def test_up_starts_each_part_as_the_cli_command_of_that_part(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, host="127.0.0.1", log_format="json")  # type: ignore[call-arg]
    specs = child_specs(
        settings,
        bootstrap="127.0.0.1:9092",
        roots=[tmp_path / "repo"],
        listen_fd=7,
        metrics_ports={"worker": 9101, "watch": 9102},
        on_serve_line=print,
        parent_pid=42,
    )
    base: tuple[str, ...] = (
        sys.executable,
        "-m",
        "deploy.cli",
        "--broker",
        "kafka://127.0.0.1:9092",
    )
    base += ("--parent-pid", "42", "--log-level", "info", "--log-format", "json")
    # The producers first (issue 21: their scan starts the pipeline).
    assert [(s.role, s.argv, s.pass_fds) for s in specs] == [
        (
            "watch",
            (*base, "--metrics-loopback-port", "9102", "watch", str(tmp_path / "repo")),
            (),
        ),
        ("worker", (*base, "--metrics-loopback-port", "9101", "worker"), ()),
        (
            "serve",
            (
                *base,
                *("serve", "--host", "127.0.0.1", "--listen-fd", "7", "--progress"),
                *("--metrics-peer", "watch=http://127.0.0.1:9102/metrics"),
                *("--metrics-peer", "worker=http://127.0.0.1:9101/metrics"),
            ),
            (7,),
        ),
    ]
    assert list(specs[1].leftovers(123)) == [tmp_path / "runs" / "worker-123"]


async def _wait_for(check, within: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + within
    while not (value := check()):
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)
    return value


def test_up_says_when_its_port_was_taken() -> None:
    assert port_note("127.0.0.1", 8765, 8765) is None
    assert port_note("127.0.0.1", 0, 41234) is None  # any port was asked for
    note = port_note("127.0.0.1", 8765, 41234)
    assert note == (
        "Port 8765 on 127.0.0.1 is taken (another `gazetteer up`?): serving on port 41234 instead."
    )

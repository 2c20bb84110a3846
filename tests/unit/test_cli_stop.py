"""A requested stop ends the process within its deadline, even when a part hangs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

HANGS_ON_STOP = """
import asyncio
import deploy.parts as parts
parts.STOP_DEADLINE_S = 0.5

async def main():
    stop = asyncio.Event()
    parts.stop_on_signals(stop)
    print("ready", flush=True)
    await stop.wait()
    await asyncio.Event().wait()  # a part that never finishes stopping

asyncio.run(main())
"""


def test_a_part_that_hangs_on_its_way_out_does_not_hold_the_stop() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", HANGS_ON_STOP],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        code = child.wait(20)
        waited = time.monotonic() - sent
    finally:
        child.kill()
    out, err = child.communicate()
    logged = out + err  # structlog's default, unconfigured here, prints to stdout
    assert code == 0
    assert "stop_requested" in logged and "stop_overdue" in logged
    assert waited >= 0.5  # it waited for the parts first

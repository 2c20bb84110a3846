#!/usr/bin/env python3
"""Container probes for the Gazetteer image: exit 0 when healthy, 1 when not.

    gazetteer-probe ready    the query service answers /health with "ready": true
    gazetteer-probe live     the query service answers /health at all
    gazetteer-probe worker   a `gazetteer worker` runs and has joined the broker
    gazetteer-probe watch    a `gazetteer watch` runs

Docker's HEALTHCHECK, the compose healthchecks and the Kubernetes exec probes run it:
an httpGet probe sees only the status code, and /health answers 200 before the read
side has caught up. The worker and the watcher serve no HTTP; a worker's run directory
(``<data dir>/runs/worker-<pid>``) exists from the moment it has connected to the
broker and ensured its topics until it stops.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from deploy.settings import Settings

ROLES = ("ready", "live", "worker", "watch")
PROC = Path("/proc")
TIMEOUT_S = 3.0


def health(port: int, timeout_s: float = TIMEOUT_S) -> dict[str, object] | None:
    """The query service's /health body on this host, or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout_s) as r:
            body = json.load(r)
    except (OSError, ValueError):  # URLError and timeouts are OSErrors
        return None
    return body if isinstance(body, dict) else None


def gazetteer_pids(verb: str, proc: Path = PROC) -> list[int]:
    """Live (not zombie) processes whose command line is ``... gazetteer [options] VERB``."""
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # the process ended while we looked
        names = [arg.decode(errors="replace") for arg in argv if arg]
        if _runs_gazetteer(names, verb) and state not in ("Z", "X"):
            pids.append(int(entry.name))
    return sorted(pids)


def _runs_gazetteer(argv: Sequence[str], verb: str) -> bool:
    """``gazetteer ... VERB``, or ``python... /path/gazetteer ... VERB`` (a script run
    by its interpreter); not an init such as ``tini -- gazetteer VERB`` that started it."""
    names = [Path(arg).name for arg in argv]
    if names[:1] == ["gazetteer"]:
        rest = argv[1:]
    elif len(names) > 1 and names[0].startswith("python") and names[1] == "gazetteer":
        rest = argv[2:]
    else:
        return False
    return verb in rest


def check(role: str, settings: Settings, proc: Path = PROC) -> bool:
    if role == "ready":
        body = health(settings.port)
        return body is not None and body.get("ready") is True
    if role == "live":
        return health(settings.port) is not None
    if role == "worker":
        runs = settings.data_dir / "runs"
        return any((runs / f"worker-{pid}").is_dir() for pid in gazetteer_pids("worker", proc))
    if role == "watch":
        return bool(gazetteer_pids("watch", proc))
    raise ValueError(f"unknown probe {role!r}: one of {', '.join(ROLES)}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: gazetteer-probe {'|'.join(ROLES)}", file=sys.stderr)
        return 2
    try:
        # pydantic-settings fills every field from the GAZETTEER_* environment.
        return 0 if check(args[0], Settings()) else 1  # type: ignore[call-arg]
    except ValueError as exc:
        print(f"gazetteer-probe: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

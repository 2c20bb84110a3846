"""A service bound beyond loopback refuses to start open, unless told (issue 19)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deploy.cli import VERBS, _parser, _refused, _settings
from deploy.settings import Settings, is_loopback_bind


def test_loopback_binds() -> None:
    assert [
        is_loopback_bind(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost")
    ] == [True] * 5
    assert [is_loopback_bind(h) for h in ("0.0.0.0", "::", "10.0.0.5", "gazetteer.internal")] == [
        False
    ] * 4


def test_only_an_open_service_beyond_loopback_is_refused() -> None:
    assert Settings(host="127.0.0.1").exposure_refused is None
    assert Settings(host="0.0.0.0", auth=True).exposure_refused is None
    assert Settings(host="0.0.0.0", insecure=True).exposure_refused is None
    assert Settings(host="0.0.0.0").exposure_refused == (
        "bound to 0.0.0.0, beyond loopback, without authentication: set GAZETTEER_AUTH=on "
        "(tokens: `gazetteer token create`), or pass --insecure to serve every repository "
        "to whoever reaches the port"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--broker", "kafka://127.0.0.1:1", "serve", "--host", "0.0.0.0"],
        ["route", "--host", "10.0.0.5", "--shard", "0-7=http://127.0.0.1:1"],
        ["up", "/nowhere", "--host", "0.0.0.0"],
    ],
)
def test_up_serve_and_route_refuse_unless_told(argv: list[str]) -> None:
    args = _parser().parse_args(argv)
    verb = VERBS[args.command]
    assert _refused(_settings(args), verb) == Settings(host=args.host).exposure_refused
    for told in ("--auth", "--insecure"):
        assert _refused(_settings(_parser().parse_args([*argv, told])), verb) is None


def test_the_refusal_is_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "deploy.cli",
            "route",
            "--host",
            "0.0.0.0",
            "--shard",
            "0-7=http://a:1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "gazetteer route: " + str(Settings(host="0.0.0.0").exposure_refused)
    ]

"""The request limits as the settings give them (``GAZETTEER_*``): the rate limit is off
for one developer on loopback unless asked for, on everywhere else."""

from __future__ import annotations

import pytest

from deploy.settings import Settings
from query.request_limits import RequestLimits
from query.token_bucket import Rate


def test_the_defaults_on_loopback() -> None:
    assert Settings(host="127.0.0.1").request_limits == RequestLimits(
        max_body_bytes=1 << 20, max_url_bytes=16 << 10, timeout_s=30.0, rate=None, audit=True
    )
    assert Settings(host="localhost").request_limits.rate is None
    assert Settings(host="::1").request_limits.rate is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "gazetteer.internal"])
def test_bound_elsewhere_the_rate_limit_is_on(host: str) -> None:
    assert Settings(host=host).request_limits.rate == Rate(per_s=20.0, burst=40)


def test_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "GAZETTEER_MAX_REQUEST_BYTES": "4096",
        "GAZETTEER_MAX_URL_BYTES": "2048",
        "GAZETTEER_REQUEST_TIMEOUT_S": "0",
        "GAZETTEER_RATE_LIMIT_PER_S": "2.5",
        "GAZETTEER_RATE_LIMIT_BURST": "5",
        "GAZETTEER_AUDIT_LOG": "false",
    }.items():
        monkeypatch.setenv(name, value)
    assert Settings().request_limits == RequestLimits(
        max_body_bytes=4096, max_url_bytes=2048, timeout_s=None, rate=Rate(2.5, 5), audit=False
    )


def test_a_rate_of_zero_is_none_wherever_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GAZETTEER_RATE_LIMIT_PER_S", "0")
    assert Settings(host="0.0.0.0").request_limits.rate is None

"""Real brokers for the integration suite, each started once per session.

`broker` is parametrized over the brokers named in ``GAZETTEER_TEST_BROKERS``
(comma list, default ``tansu,kafka``): the embedded Tansu and Apache Kafka 4.x
(KRaft, jars from Maven Central, cached under ~/.cache/gazetteer). Both fixtures
yield the launcher itself, which has ``.bootstrap`` and ``.kind``.

The Tansu fixture installs the client-side workaround for Tansu's bug (a), as the
embedded launcher's caller does in production (`deploy.tansu_quirks`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from deploy.embedded_broker import EmbeddedBroker
from deploy.kafka_dist import ApacheKafka
from deploy.tansu_quirks import install
from tests.integration.stack import Stack, running_stack

Broker = EmbeddedBroker | ApacheKafka

KINDS = ("tansu", "kafka")


def selected_kinds() -> list[str]:
    chosen = os.environ.get("GAZETTEER_TEST_BROKERS", ",".join(KINDS))
    kinds = [kind.strip() for kind in chosen.split(",") if kind.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise pytest.UsageError(f"GAZETTEER_TEST_BROKERS names unknown brokers: {unknown}")
    return kinds


def _require(kind: str) -> None:
    if kind not in selected_kinds():
        pytest.skip(f"{kind} is not in GAZETTEER_TEST_BROKERS")


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def tansu_broker() -> AsyncIterator[EmbeddedBroker]:
    _require("tansu")
    install(broker_is_tansu=True)
    async with EmbeddedBroker() as broker:
        yield broker


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def kafka_broker() -> AsyncIterator[ApacheKafka]:
    _require("kafka")
    async with ApacheKafka(partitions=1) as broker:
        yield broker


@pytest.fixture(scope="session", params=selected_kinds())
def broker(request: pytest.FixtureRequest) -> Broker:
    """Each selected broker in turn, started once for the whole session."""
    return request.getfixturevalue(f"{request.param}_broker")


@pytest.fixture
def tansu_selected() -> None:
    """Skips a test that starts its own embedded brokers when tansu is not selected."""
    _require("tansu")


@pytest.fixture
def unique_name() -> Callable[[str], str]:
    """Topic and group names that no other test (or earlier run) has used."""

    def make(prefix: str) -> str:
        return f"test.{prefix}.{uuid.uuid4().hex[:10]}"

    return make


@pytest.fixture
async def stack(broker: Broker, tmp_path: Path) -> AsyncIterator[Stack]:
    """A worker and a query service on ``broker`` (a module may override it with its own
    settings); each test starts its own sources."""
    async with running_stack(broker.bootstrap, tmp_path / "data") as running:
        yield running

"""The worker's and the producers' /metrics asks a ``metrics`` token once authentication
is on (issue 19), on a real broker: the endpoint the worker and ``watch`` serve
(`metrics_served`) follows the tokens topic, as ``gazetteer token`` publishes it.

One token is on the topic before the endpoint starts (read from the beginning), the
other after (followed); a revocation is refused within seconds.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import httpx
import pytest

from deploy.metrics_server import metrics_served
from deploy.runtime import Cluster
from deploy.settings import Settings
from deploy.token_cli import new_record, publish
from deploy.topics_admin import ensure_topics
from producers.topics import TopicSpec
from tests.integration.conftest import Broker
from tests.integration.stack import eventually

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_worker_metrics_ask_a_metrics_token_and_a_revocation_holds_within_seconds(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    settings = Settings.model_validate(
        {
            "namespace": unique_name("wmetrics"),
            "auth": True,
            "host": "127.0.0.1",
            "metrics_port": free_port(),
        }
    )
    topic = settings.topics.tokens
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 2)])
    cluster = Cluster(broker.bootstrap, tansu=broker.kind == "tansu")
    metrics_secret, metrics_token = new_record("prometheus", "*", ["metrics"], time.time())
    await publish(settings, cluster, metrics_token)  # before: read from the beginning
    url = f"http://127.0.0.1:{settings.metrics_port}/metrics"

    async with metrics_served(settings, broker.bootstrap), httpx.AsyncClient() as client:

        async def answers(secret: str, status: int) -> bool:
            headers = {"Authorization": f"Bearer {secret}"}
            return (await client.get(url, headers=headers)).status_code == status

        await eventually(lambda: answers(metrics_secret, 200), 10, "the metrics token")
        read_secret, read_token = new_record("ci-agent", "*", ["read", "admin"], time.time())
        await publish(settings, cluster, read_token)  # after: followed
        await eventually(lambda: answers(read_secret, 403), 10, "the read token")

        refused = await client.get(url)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == 'Bearer realm="gazetteer"'
        wrong = await client.get(url, headers={"Authorization": "Bearer gzt_guessed"})
        assert wrong.status_code == 401
        forbidden = await client.get(url, headers={"Authorization": f"Bearer {read_secret}"})
        assert forbidden.headers["www-authenticate"] == (
            'Bearer realm="gazetteer", error="insufficient_scope", scope="metrics"'
        )
        answered = await client.get(url, headers={"Authorization": f"Bearer {metrics_secret}"})
        assert answered.status_code == 200
        assert answered.headers["content-type"].startswith("text/plain")
        assert "# TYPE gazetteer_stage_seconds histogram" in answered.text

        revoked_at = time.monotonic()
        await publish(settings, cluster, metrics_token.model_copy(update={"revoked": True}))
        await eventually(lambda: answers(metrics_secret, 401), 5, "the revocation")
        print(f"revocation refused after {time.monotonic() - revoked_at:.2f} s")

    async with httpx.AsyncClient() as client:  # stopped with its last user, follower too
        with pytest.raises(httpx.ConnectError):
            await client.get(url)

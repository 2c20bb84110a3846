"""Neighborhoods kept by a state snapshot are published again without failing a restore."""

from __future__ import annotations

from aiokafka.errors import MessageSizeTooLargeError
from structlog.testing import capture_logs

from processors.app import republish
from stores.neighborhoods import NeighborhoodSnapshot
from tests.factories import neighborhood_snapshot


class RefusingSink:
    def __init__(self) -> None:
        self.tried: list[str] = []

    async def publish_snapshot(self, snapshot: NeighborhoodSnapshot) -> None:
        self.tried.append(snapshot.repo)
        raise MessageSizeTooLargeError("over the topic's limit")


async def test_a_refused_republish_is_logged_and_the_restore_goes_on() -> None:
    sink = RefusingSink()
    snapshot = neighborhood_snapshot("app-1", 3, 7, {"nb-a": ("a.py",)})
    with capture_logs() as logs:
        await republish(sink, snapshot)  # type: ignore[arg-type]
    assert sink.tried == ["app-1"]  # refused for good: not retried
    (refused,) = [e for e in logs if e["event"] == "neighborhoods_republish_refused"]
    assert refused["repo"] == "app-1" and "MessageSizeTooLargeError" in refused["error"]

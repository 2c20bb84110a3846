"""The worker's faust table manager (processors/app.py `TablelessManager`): with no table
declared it starts without faust's fixed 1 s wait; with one, as faust does."""

from __future__ import annotations

import faust
import pytest
from faust.tables import TableManager

from processors.app import TablelessManager


def app_tables(*tables: str) -> TablelessManager:
    app = faust.App(
        "tableless-test",
        broker="kafka://127.0.0.1:1",  # never reached: nothing here connects
        store="memory://",
        web_enabled=False,
        TableManager=TablelessManager,
    )
    for name in tables:
        app.Table(name, default=int)
    app.consumer.assignment = set  # type: ignore[method-assign]  # not started: none
    manager = app.tables
    assert isinstance(manager, TablelessManager)
    return manager


async def test_no_table_starts_at_once_and_a_table_waits_as_faust_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []

    async def sleep(self: TableManager, seconds: float) -> None:
        calls.append(f"sleep {seconds}")

    async def recovery_start() -> None:  # needs a started consumer
        calls.append("recovery")

    async def faust_start(self: TableManager) -> None:
        calls.append("faust's start")

    monkeypatch.setattr(TableManager, "sleep", sleep)
    bare = app_tables()
    monkeypatch.setattr(bare.recovery, "start", recovery_start)
    await bare.on_start()
    assert calls == ["recovery"]
    # what the conductor waits for to subscribe; a table declared now is refused
    assert bare._tables_registered.is_set() and bare._tables_finalized.is_set()
    calls.clear()
    monkeypatch.setattr(TableManager, "on_start", faust_start)
    await app_tables("counts").on_start()
    assert calls == ["faust's start"]

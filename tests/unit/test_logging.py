"""JSON logs: every line logged while an event is handled names the event, the lines of
the libraries' stdlib loggers included."""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Iterator
from typing import TypeVar

import pytest
import structlog

from deploy.logging_setup import NOISY, configure_logging
from processors.indexer import RepoIndex
from processors.parsing import ParseResult
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink, Message
from producers.events import encode
from producers.topics import DEFAULT_TOPICS
from stores.delta_log import InMemoryDeltaLog
from tests.factories import Stamp, tiny_parse

Stream = TypeVar("Stream", bound=io.StringIO)


@contextlib.contextmanager
def logging_to(out: Stream, part: str | None = None) -> Iterator[Stream]:
    """Logs configured as in production (json), into ``out``; restored afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, {n: logging.getLogger(n).level for n in NOISY})
    config = structlog.get_config()
    configure_logging("info", "json", stream=out, part=part)
    try:
        yield out
    finally:
        structlog.configure(**config)
        root.handlers[:], root.level = saved[0], saved[1]
        for name, level in saved[2].items():
            logging.getLogger(name).setLevel(level)


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    with logging_to(io.StringIO()) as out:
        yield out


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def parse_that_logs_and_fails(path: str, content: bytes) -> ParseResult:
    if path == "bad.py":
        logging.getLogger("aiokafka.consumer").warning("library %s", "complained")
        raise RuntimeError("a parser bug")
    return tiny_parse(path, content)


EVENT_FIELDS = ("repo", "path", "commit", "producer", "seq", "kind", "topic", "partition")


async def test_lines_logged_while_handling_an_event_carry_its_ids(
    json_lines: io.StringIO,
) -> None:
    log = InMemoryDeltaLog()
    pipeline = IndexingPipeline(
        log,
        InMemoryDeltaSink(log),
        new_index=lambda repo: RepoIndex(repo, parse=parse_that_logs_and_fails),
    )
    stamp = Stamp(repo="app-1", producer="session-7")
    events = [
        stamp.claim(),
        stamp.changed("a.py", "def f"),
        stamp.changed("bad.py", "def g", commit="abc1234"),
    ]
    topic = DEFAULT_TOPICS.file_events
    await pipeline.process_batch(
        [Message(topic, 3, 40 + i, b"app-1", encode(e)) for i, e in enumerate(events)]
    )
    structlog.get_logger("test").info("after_the_batch")

    by_event = {line["event"]: line for line in lines(json_lines)}
    library, failed = by_event["library complained"], by_event["event_failed"]
    expected = {
        "repo": "app-1",
        "path": "bad.py",
        "commit": "abc1234",
        "producer": "session-7",
        "seq": 3,
        "kind": "file_changed",
        "topic": topic,
        "partition": 3,
    }
    assert {k: failed[k] for k in EVENT_FIELDS} == expected
    assert failed["offset"] == 42 and failed["level"] == "error"
    assert "RuntimeError: a parser bug" in str(failed["exception"])
    # faust's and aiokafka's lines go through the stdlib logger: the same context.
    assert {k: library[k] for k in EVENT_FIELDS} == expected
    assert (library["logger"], library["level"]) == ("aiokafka.consumer", "warning")
    # The context ends with the event.
    restored = by_event["partition_restored"]
    assert restored["repo"] == "app-1" and "path" not in by_event["after_the_batch"]
    assert not {"repo", "topic", "seq"} & set(by_event["after_the_batch"])


async def test_a_malformed_event_is_logged_with_where_it_was_read(
    json_lines: io.StringIO,
) -> None:
    log = InMemoryDeltaLog()
    pipeline = IndexingPipeline(log, InMemoryDeltaSink(log))
    await pipeline.process(Message("t.file-events.v1", 1, 7, b"app-1", b"{not json"))

    (line,) = [line for line in lines(json_lines) if line["event"] == "event_malformed"]
    assert {k: line[k] for k in ("topic", "partition", "offset", "level")} == {
        "topic": "t.file-events.v1",
        "partition": 1,
        "offset": 7,
        "level": "warning",
    }
    assert str(line["reason"]).startswith("ValidationError")
    assert "repo" not in line


class Writes(io.StringIO):
    """A stream that keeps every ``write`` call apart."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def write(self, text: str) -> int:
        self.calls.append(text)
        return super().write(text)


def test_each_line_reaches_the_stream_in_one_write() -> None:
    """Processes sharing one pipe (``up``'s children on its stderr) interleave between
    writes, not within one: a line and its newline written apart became two records on
    one line."""
    with logging_to(Writes()) as out:
        structlog.get_logger().info("broker_connected", bootstrap="127.0.0.1:9092")
        logging.getLogger("gazetteer.test").warning("from %s", "stdlib")
    whole = [call for call in out.calls if call]
    assert len(whole) == 2
    assert all(call.endswith("\n") and call.count("\n") == 1 for call in whole)
    assert [json.loads(call)["event"] for call in whole] == ["broker_connected", "from stdlib"]


def test_a_part_under_up_names_itself_on_every_line() -> None:
    """``up``'s children share its stderr: each line says which part wrote it, the
    stdlib loggers' too; a process on its own says nothing of the kind."""
    with logging_to(io.StringIO(), part="watch") as out:
        structlog.get_logger().info("scan_started", files_total=3)
        logging.getLogger("aiokafka.consumer").warning("library %s", "complained")
    assert [(line["event"], line["part"]) for line in lines(out)] == [
        ("scan_started", "watch"),
        ("library complained", "watch"),
    ]
    with logging_to(io.StringIO()) as out:
        structlog.get_logger().info("scan_started", files_total=3)
    assert "part" not in lines(out)[0]

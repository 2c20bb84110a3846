"""The lease (issue 15): where every event stands against the state's owner, and a
producer that stops when a greater lease claims its repository."""

from __future__ import annotations

import asyncio
from pathlib import Path

from processors.indexer import RepoIndex
from producers.events import FileChanged, LeaseClaimed
from producers.lease import InMemoryLeaseWatch, next_epoch
from producers.session import Skipped, SourceOptions, run_source, unique_repositories
from producers.signing import SessionKey
from producers.source import InMemorySink
from tests.factories import Stamp, tiny_parse
from tests.gitrepo import GitRepo

FORGER = SessionKey.from_seed(b"f" * 32)


def claimed(producer: str = "p1", epoch: int = 1) -> tuple[RepoIndex, Stamp]:
    index, s = RepoIndex("app-1", parse=tiny_parse), Stamp(producer=producer, epoch=epoch)
    assert s.claimed(index) is not None
    return index, s


def test_the_first_claim_is_next_and_records_the_lease_only() -> None:
    index, s = RepoIndex("app-1", parse=tiny_parse), Stamp(producer="p1", epoch=3)
    assert index.position(s.claim()) == "next"
    delta = s.claimed(index)
    assert delta is not None and delta.changes == 0 and delta.event_kind == "lease_claimed"
    assert delta.lease is not None
    assert (delta.lease.key, delta.lease.public_key) == ((3, "p1"), s.key.public_key)
    assert index.state.lease == delta.lease
    assert index.position(s.claim()) == "replay"  # the claim sent again


def test_a_greater_claim_is_next_and_a_lesser_or_equal_one_fenced() -> None:
    index, _ = claimed("p5", epoch=2)
    assert index.position(Stamp(producer="p1", epoch=3).claim()) == "next"  # greater epoch
    assert index.position(Stamp(producer="p9", epoch=2).claim()) == "next"  # tie: greater id
    assert index.judge(Stamp(producer="p1", epoch=2).claim()).position == "fenced"
    assert index.judge(Stamp(producer="p9", epoch=1).claim()).reason == (
        "lease (1, p9) is older than the current (2, p5)"
    )


def test_events_of_the_current_lease_replay_follow_or_come_out_of_order() -> None:
    index, s = claimed()
    first, second, third = s.changed("a.py", "def f"), s.changed("b.py", "g"), s.changed("c", "")
    assert index.position(second) == "gap"
    assert index.judge(third).reason == "expected seq 2, got 4 (a resend will bring it again)"
    assert index.position(first) == "next"
    index.handle(first, now=1.0)
    assert index.position(first) == "replay" and index.position(second) == "next"


def test_an_event_whose_signature_fails_is_forged_even_with_the_next_seq() -> None:
    index, s = claimed()
    real = s.changed("a.py", "def f")
    assert index.judge(FORGER.sign(real)).position == "forged"
    assert index.judge(real.model_copy(update={"path": "b.py"})).position == "forged"
    forged_claim = FORGER.sign(s.claim())  # the claim's own key no longer verifies
    assert index.judge(forged_claim).reason == (
        "the claim's signature does not verify against its key"
    )
    # A claim of the current lease with another key is a forgery, not a replay.
    other = Stamp(producer="p1").claim().model_copy(update={"public_key": FORGER.public_key})
    assert index.judge(FORGER.sign(other)).reason == "lease (1, p1) was claimed with another key"
    assert index.position(real) == "next"


def test_events_of_an_older_lease_are_fenced_and_of_an_unclaimed_one_refused() -> None:
    index, old = claimed("p1")
    applied = old.changed("a.py", "def f")
    index.handle(applied, now=1.0)
    new = Stamp(producer="p2", epoch=2)
    assert index.position(new.changed("b.py", "g")) == "unclaimed"
    new.claimed(index)
    late = old.changed("late.py", "def late")
    assert index.judge(late).position == "fenced"
    assert index.position(applied) == "replay"  # applied before the claim: a replay
    assert index.judge(Stamp(producer="p3", epoch=9).changed("x", "")).reason == (
        "lease (9, p3) was never claimed; the current is (2, p2)"
    )
    assert index.judge(Stamp(producer="p0").changed("x", "")).position == "fenced"


def test_an_event_before_any_claim_is_unclaimed() -> None:
    index, s = RepoIndex("app-1", parse=tiny_parse), Stamp()
    assert index.judge(s.changed("a.py", "def f")).reason == (
        "lease (1, p1) was never claimed (no lease yet)"
    )


def test_a_restored_index_keeps_the_lease_and_the_fenced_ones() -> None:
    index, old = claimed("p1")
    deltas = [index.handle(old.changed("a.py", "def f"), now=1.0)]
    new = Stamp(producer="p2", epoch=2)
    deltas += [new.claimed(index), index.handle(new.changed("b.py", "def g"), now=2.0)]
    restored = RepoIndex.restore("app-1", [old.claimed(RepoIndex("app-1", tiny_parse))])
    for delta in deltas:
        assert delta is not None and restored.apply(delta)
    assert restored.state.lease == index.state.lease
    assert [(f.lease.key, f.last_seq) for f in restored.state.fenced] == [((1, "p1"), 2)]
    assert restored.position(old.changed("c.py", "h")) == "fenced"
    assert restored.position(new.changed("c.py", "h")) == "next"


def test_the_first_root_of_a_repository_is_followed_the_others_skipped() -> None:
    a, b, c = Path("/src/app"), Path("/src/lib"), Path("/tmp/app-clone")
    kept, skipped = unique_repositories([(a, "app"), (b, "lib"), (c, "app"), (a, "app")])
    assert kept == [(a, "app"), (b, "lib")]
    assert skipped == [Skipped(c, a, "app"), Skipped(a, a, "app")]
    assert next_epoch(0) == 1 and next_epoch(4) == 5


async def test_a_session_claims_one_more_epoch_and_stops_when_fenced(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "r", {"a.py": "def a\n"})
    leases = InMemoryLeaseWatch()
    sink, other = InMemorySink(leases=leases), InMemorySink(leases=leases)
    options = SourceOptions(debounce_ms=20, poll_s=0.05, heartbeat_s=30.0)
    stop = asyncio.Event()
    first = asyncio.create_task(
        run_source(
            repo.root, sink, options, since_commit=None, stop=stop,
            known_epoch=lambda r: 4, leases=leases,
        )
    )  # fmt: skip
    while not sink.statuses or sink.statuses[-1].state != "watching":
        await asyncio.sleep(0.01)
    claim = sink.events[0]
    assert isinstance(claim, LeaseClaimed) and (claim.seq, claim.epoch) == (1, 5)
    assert all(e.epoch == 5 for e in sink.events)
    second = asyncio.create_task(
        run_source(
            repo.root, other, options, since_commit=None, stop=stop,
            known_epoch=lambda r: 5, leases=leases,
        )
    )  # fmt: skip
    await asyncio.wait_for(first, 10)  # the first stops on its own; the process goes on
    assert not second.done() and not stop.is_set()
    last = sink.statuses[-1]
    assert (last.state, last.epoch, last.producer) == ("fenced", 5, claim.producer)
    emitted = len(sink.events)
    repo.write("b.py", "def b\n")
    while not any(isinstance(e, FileChanged) and e.path == "b.py" for e in other.events):
        await asyncio.sleep(0.01)
    assert len(sink.events) == emitted  # the fenced session sends nothing more
    stop.set()
    await asyncio.wait_for(second, 10)
    assert other.events[0].epoch == 6 and other.statuses[-1].state == "stopped"

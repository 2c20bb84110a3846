"""One owner per repository (issue 15), through a real broker, worker and read side.

Two producer sessions follow the same repository; the second claims a greater lease and
the first stops on its own, saying so. A forged event with the owner's next sequence
number, produced directly, is dead-lettered and never applied; the real edit with that
number is. The index ends equal to the files on disk.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from deploy.sources_part import run_sources
from producers.events import FileChanged, content_hash, encode
from producers.signing import SessionKey
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually

pytestmark = pytest.mark.integration

FILES: dict[str, str | bytes] = {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(6)}
FORGER = SessionKey.from_seed(b"f" * 32)


def sources(stack: Stack, root: Path, stop: asyncio.Event) -> asyncio.Task[None]:
    model = stack.model
    assert model is not None
    return asyncio.ensure_future(
        run_sources(stack.settings, stack.cluster, [root], stop, known_epoch=model.known_epoch)
    )


def on_disk(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): content_hash(p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }


async def test_a_second_producer_fences_the_first_and_a_forged_event_is_refused(
    stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "r", FILES)
    model = stack.model
    assert model is not None
    first_stop, second_stop = asyncio.Event(), asyncio.Event()
    first = sources(stack, repo.root, first_stop)

    def fresh_with(files: dict[str, str], producer_epoch: int):
        async def check() -> bool:
            views = list(model.repos.values())
            if len(views) != 1 or views[0].status is None:
                return False
            view = views[0]
            assert view.status is not None
            hashes = {p: r.content_hash for p, r in view.state.files.items()}
            return (
                view.status.epoch == producer_epoch
                and model.freshness(view.state.repo).status == "fresh"
                and hashes == files
            )

        return check

    await eventually(fresh_with(on_disk(repo.root), 1), 60, "the first session indexed")
    (rid,) = model.repos
    first_lease = model.repos[rid].state.lease
    assert first_lease is not None and first_lease.epoch == 1

    second = sources(stack, repo.root, second_stop)  # another process, the same repository
    await asyncio.wait_for(first, 60)  # the older one stops on its own
    assert not first_stop.is_set() and not second.done()
    view = model.repos[rid]

    async def fenced_said() -> bool:
        said = view.statuses.get(first_lease.producer)
        return said is not None and said.state == "fenced"

    await eventually(fenced_said, 30, "the fenced producer's last status")
    repo.write("pkg/new.py", "def new():\n    return 0\n")
    await eventually(fresh_with(on_disk(repo.root), 2), 60, "the second session indexed")
    owner, status = view.owner, view.status
    assert owner is not None and status is not None
    assert (owner.epoch, owner.producer) == (2, status.producer)
    assert view.fenced_producers == [(1, first_lease.producer)]

    # A forged event with the owner's next sequence number, produced directly.
    evil = b"def evil():\n    return 666\n"
    forged = FORGER.sign(
        FileChanged(
            repo=rid,
            producer=status.producer,
            seq=status.last_seq + 1,
            epoch=status.epoch,
            emitted_at=status.sent_at,
            sig="",
            path="pkg/m0.py",
            content=evil,
            content_hash=content_hash(evil),
            size=len(evil),
            origin="watch",
            commit=None,
            working_tree=True,
        )
    )
    producer = AIOKafkaProducer(bootstrap_servers=stack.cluster.bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(
            stack.settings.topics.file_events, key=rid.encode(), value=encode(forged)
        )
    finally:
        await producer.stop()

    async def forged_dead_lettered() -> bool:
        return any(
            d.failure == "rejected" and d.reason.startswith("forged:") for d in model.dead_letters
        )

    await eventually(forged_dead_lettered, 60, "the forged event's dead letter")
    repo.write("pkg/m0.py", "def f0():\n    return 100\n")  # the real edit, the same seq
    await eventually(fresh_with(on_disk(repo.root), 2), 60, "the real edit indexed")
    record = view.state.files["pkg/m0.py"]
    assert record.content_hash == content_hash(b"def f0():\n    return 100\n")
    assert [s.name for s in record.symbols] == ["f0"]
    second_stop.set()
    await asyncio.wait_for(second, 60)

"""A replica's repositories started from the state-snapshots topic (issue 16 §2).

Wherever a query replica runs, it loads each repository's latest snapshot published on
the topic (`load`, decoded off the loop) before it reads the graph deltas, and then
folds only the deltas after it: a message the snapshot covers is skipped undecoded
(`covers`: its number read from its first bytes, `stores.deltas.peek_seq`), and the
snapshot's own delta is decoded to tell whether the log continues it (`admits`,
`stores.state_snapshot.Continuation`). A snapshot the log does not continue (another
event under its number, or a log that ends before it: `ended`) is refused, logged
``state_snapshot_rejected`` with ``source="topic"``, its repository emptied and named in
``rewind``: the materializer reads its partition again from the start, and the log
alone decides. Never a mix of both.

The covered deltas are not even fetched when the snapshots say where their own deltas
begin (`stores.delta_seek`): ``seeks`` names, per partition, where the materializer
starts it; each snapshot's own delta must then be found at its offset (``anchored``),
else the partition is read from its start (``unseek``), as without offsets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import structlog

from query.churn.durable import SavedLedger
from query.read_model import ReadModel
from query.state_restore import empty_view, load_snapshot
from stores.delta_seek import AnchorCheck, Seek, plan
from stores.deltas import GraphDelta, peek_envelope, peek_seq
from stores.state_snapshot import Continuation, SnapshotHeader
from stores.state_topic import StateTopic, read_offered

log = structlog.get_logger(__name__)


class TopicSnapshots:
    def __init__(self, topic: StateTopic, model: ReadModel) -> None:
        self._topic = topic
        self._model = model
        self.continuing: dict[str, Continuation] = {}
        self.refused: set[str] = set()  # the log alone decides these
        self.rewind: set[str] = set()  # refused, their partition not read again yet
        self.skipped = 0  # graph-delta messages a loaded snapshot covered, not decoded
        self.checked = 0  # messages of the snapshots' own deltas, judged by their envelope
        self.seeks: dict[int, Seek] = {}  # partition -> where its read starts
        self._checks: dict[int, AnchorCheck] = {}  # the seeks' anchors not yet all met
        self.unseek: set[int] = set()  # seeks refused: partitions to read from the start

    async def load(
        self,
        partitions: Sequence[int],
        ledger_of: Callable[[str], SavedLedger | None] = lambda repo: None,
    ) -> None:
        """Each repository's latest snapshot on these partitions, loaded when ahead of
        what the model holds, with the churn ledger ``ledger_of`` gives, if it fits."""
        # One partition at a time: only its messages are held meanwhile.
        at = 0
        async for offered in self._topic.latest_each(partitions):
            partition, at = partitions[at], at + 1
            loaded: list[SnapshotHeader] = []
            every = bool(offered) and partition not in self._topic.troubled
            for repo in sorted(offered):
                header = offered[repo].header
                decoded = await asyncio.to_thread(read_offered, offered.pop(repo))
                if decoded is None or repo in self.refused:
                    every = False
                    continue
                snapshot = decoded.snapshot
                if load_snapshot(self._model, snapshot, ledger_of(repo), decoded.postings):
                    self.continuing[repo] = Continuation.of(snapshot)
                    loaded.append(header)
                else:
                    every = False
            seek = plan(loaded) if every else None
            if seek is not None:
                self.seeks[partition] = seek
                self._checks[partition] = AnchorCheck(seek)
                for repo, before in seek.left_out().items():
                    self.continuing[repo].skip(before)  # the log holds it: not fetched

    def anchored(self, partition: int, offset: int, key: bytes | None, value: bytes | None) -> bool:
        """Whether a graph-delta message read after a seek is where the snapshots say (or
        not one they name); False: the seek is refused, the partition to be read from
        its start (the materializer seeks there)."""
        check = self._checks.get(partition)
        if check is None or check.see(offset, key, value):
            return True
        self._unseek(partition, check)
        return False

    def _unseek(self, partition: int, check: AnchorCheck) -> None:
        del self._checks[partition]
        seek = self.seeks.pop(partition)
        for anchor in seek.anchors:  # judged by the whole log, as if never sought
            continuation = self.continuing.get(anchor.repo)
            if continuation is not None and not continuation.confirmed:
                continuation.before = 0
        self.unseek.add(partition)
        log.warning(
            "graph_deltas_seek_refused", partition=partition, start=seek.start, reason=check.failed
        )

    def from_start(self, partitions: Sequence[int]) -> None:
        """These partitions are read again from their start: their seeks are over."""
        for partition in partitions:
            self._checks.pop(partition, None)
            self.seeks.pop(partition, None)

    def covers(self, key: bytes | None, value: bytes) -> bool:
        """Whether a graph-delta message is one a loaded snapshot covers (numbered before
        the snapshot's own delta, or that delta itself, judged by its envelope): to
        skip, undecoded."""
        if key is None or not self.continuing:
            return False
        repo = key.decode(errors="replace")
        continuation = self.continuing.get(repo)
        if continuation is None:
            return False
        seq = peek_seq(value, repo)
        if seq is None or seq > continuation.seq:
            return False
        if seq == continuation.seq:
            return self._own(repo, continuation, value)
        continuation.skip(seq)
        self.skipped += 1
        return True

    def _own(self, repo: str, continuation: Continuation, value: bytes) -> bool:
        """A message (or a part) of the snapshot's own delta: judged by its envelope, its
        records not built (the state holds them already): True, to leave it out, unless
        it does not read so (then decoded whole, as any other)."""
        envelope = peek_envelope(value)
        if envelope is None or envelope.repo != repo:
            return False
        reason = continuation.see(envelope)
        if reason is not None:
            self._refuse(repo, reason)
        self.checked += 1
        return True

    def admits(self, whole: GraphDelta) -> bool:
        """Whether a whole delta may be folded: False when it shows that the log does not
        continue its repository's snapshot (refused)."""
        continuation = self.continuing.get(whole.repo)
        if continuation is None:
            return True
        reason = continuation.see(whole)
        if reason is None:
            return True
        self._refuse(whole.repo, reason)
        return False

    def ended(self) -> bool:
        """At the end of the log: refuse the snapshots it stopped short of; True when a
        partition is to be read again (``rewind``, or ``unseek``: an anchor never met,
        judged again on the whole partition first)."""
        for partition, check in sorted(self._checks.items()):
            if check.end() is not None:
                self._unseek(partition, check)
        if self.unseek:
            return True
        for repo, continuation in sorted(self.continuing.items()):
            reason = continuation.end()
            if reason is not None:
                self._refuse(repo, reason)
        return bool(self.rewind)

    def _refuse(self, repo: str, reason: str) -> None:
        del self.continuing[repo]
        empty_view(self._model, repo)
        self.refused.add(repo)
        self.rewind.add(repo)
        log.warning(
            "state_snapshot_rejected",
            source="topic",
            repo=repo,
            reason="other_history",
            detail=reason,
        )

    def reset(self) -> None:
        """The topics were lost: the next run loads what the new ones hold."""
        self.continuing, self.refused, self.rewind = {}, set(), set()
        self.skipped = self.checked = 0
        self.seeks, self._checks, self.unseek = {}, {}, set()

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
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence

import structlog

from query.churn.durable import SavedLedger
from query.read_model import ReadModel
from query.state_restore import empty_view, load_snapshot
from stores.deltas import GraphDelta, peek_seq
from stores.state_snapshot import Continuation
from stores.state_topic import StateTopic, decode_offered

log = structlog.get_logger(__name__)


class TopicSnapshots:
    def __init__(self, topic: StateTopic, model: ReadModel) -> None:
        self._topic = topic
        self._model = model
        self.continuing: dict[str, Continuation] = {}
        self.refused: set[str] = set()  # the log alone decides these
        self.rewind: set[str] = set()  # refused, their partition not read again yet
        self.skipped = 0  # graph-delta messages a loaded snapshot covered, not decoded

    async def load(
        self,
        partitions: Sequence[int],
        ledger_of: Callable[[str], SavedLedger | None] = lambda repo: None,
    ) -> None:
        """Each repository's latest snapshot on these partitions, loaded when ahead of
        what the model holds, with the churn ledger ``ledger_of`` gives, if it fits."""
        # One partition at a time: only its messages are held meanwhile.
        async for offered in self._topic.latest_each(partitions):
            for repo in sorted(offered):
                snapshot = await asyncio.to_thread(
                    functools.partial(decode_offered, references=False), offered.pop(repo)
                )
                if snapshot is None or repo in self.refused:
                    continue
                if load_snapshot(self._model, snapshot, ledger_of(repo)):
                    self.continuing[repo] = Continuation.of(snapshot)

    def covers(self, key: bytes | None, value: bytes) -> bool:
        """Whether a graph-delta message is one a loaded snapshot covers (numbered before
        the snapshot's own delta): to skip, undecoded."""
        if key is None or not self.continuing:
            return False
        repo = key.decode(errors="replace")
        continuation = self.continuing.get(repo)
        if continuation is None:
            return False
        seq = peek_seq(value, repo)
        if seq is None or seq >= continuation.seq:
            return False
        continuation.skip(seq)
        self.skipped += 1
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
        partition is to be read again (``rewind``)."""
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
        self.skipped = 0

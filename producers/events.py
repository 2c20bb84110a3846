"""Event contracts of the producers: what enters the pipeline.

Every message is a frozen, versioned pydantic model (``extra="forbid"``), discriminated
by ``kind`` and keyed by repository id on the wire. Each event carries the producer that
emitted it and that producer's sequence number: together they make a replayed event
recognisable (the processors skip it) and tell the readers how many events are pending.

One producer owns a repository at a time (issue 15). A producer session opens with a
``LeaseClaimed`` (seq 1) that names its lease, ``(epoch, producer)``, and the public half
of an Ed25519 key made for the session; every event of the session carries the epoch
and ``sig``, the session key's signature (producers/signing.py). The worker keeps the
greatest lease it has seen claimed: events of an older lease are fenced, events whose
signature does not verify are forged, and neither is applied.
File contents travel inline (base64 in JSON) up to a cap, so a worker never needs the
repository on its disk.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

SCHEMA_VERSION = 1

Origin = Literal["scan", "watch", "commit"]

SkipReason = Literal[
    "binary",
    "too_large",
    "unreadable",
    "symlink_outside_repository",
    "not_a_regular_file",
    "undecodable_name",  # the name is not UTF-8: the path is its bytes, backslash-escaped
    "unreadable_directory",  # the directory could not be listed: nothing under it is known
    "secret_file",  # a secret by its name (.env, *.pem, id_rsa, ...): never read (issue 19)
]
"""Why a FileChanged carries no content. The state records it; nothing is parsed."""


def _repository_path(path: str) -> str:
    """A normalized POSIX path inside the repository: no root, no '..', no '.' parts."""
    parts = path.split("/")
    if path.startswith("/") or "\x00" in path:
        raise ValueError(f"not a relative POSIX path: {path!r}")
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"not a normalized path inside the repository: {path!r}")
    return path


RepoPath = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(_repository_path)]
"""POSIX path relative to the repository root; anything that could leave it is refused."""


def content_hash(data: bytes) -> str:
    """The identity of a file's contents: sha256, hex."""
    return hashlib.sha256(data).hexdigest()


class Contract(BaseModel):
    """The base of every message producers publish: frozen, strict (unknown fields are
    errors), bytes as base64 in JSON."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        ser_json_bytes="base64",
        val_json_bytes="base64",
    )


class EventBase(Contract):
    """What every file event carries: its repository, the producer session that emitted
    it, that session's gap-free sequence number and lease epoch, and its signature."""

    v: Literal[1] = 1
    repo: str = Field(min_length=1, description="stable repository id")
    producer: str = Field(min_length=1, description="the emitting producer's session id")
    seq: int = Field(ge=1, description="the producer's sequence number, from 1, no gaps")
    emitted_at: float = Field(description="unix time, seconds, when the producer emitted it")
    epoch: int = Field(ge=1, description="the lease epoch of the session (its LeaseClaimed's)")
    sig: str = Field(
        description="hex Ed25519 signature by the session's key of this event with sig set"
        ' to "" (producers/signing.py)'
    )


class LeaseClaimed(EventBase):
    """The first event of a producer session (seq 1): it claims the repository.

    The lease is the pair ``(epoch, producer)``, ordered as a tuple (the epoch first, the
    producer id breaking a tie between two sessions that chose the same epoch). A claim
    greater than the worker's current lease fences that lease; its ``public_key`` then
    verifies every later event of the session. The claim is signed by its own key, which
    proves the claimant holds the private half.
    """

    kind: Literal["lease_claimed"] = "lease_claimed"
    seq: int = Field(ge=1, le=1, description="a claim opens its session: always 1")
    public_key: str = Field(pattern="^[0-9a-f]{64}$", description="Ed25519 public key, hex")
    host: str = Field(description="the producer's host name")
    root: str = Field(description="the repository's path on the producer's machine")
    started_at: float = Field(description="unix time, seconds, when the session started")


class FileChanged(EventBase):
    """A file's contents at a point in time: scanned, saved in the work tree, or committed.

    ``content`` is None when the file was skipped (``skipped`` says why); the state
    records the file with that reason and keeps nothing parsed for it.
    """

    kind: Literal["file_changed"] = "file_changed"
    path: RepoPath
    content: bytes | None
    content_hash: str | None
    size: int = Field(ge=0)
    origin: Origin
    commit: str | None = Field(description="the commit the contents come from, if any")
    working_tree: bool = Field(description="True when read from the work tree, not a commit")
    skipped: SkipReason | None = None


class FileDeleted(EventBase):
    """A file that no longer exists: removed from the work tree, or by a commit."""

    kind: Literal["file_deleted"] = "file_deleted"
    path: RepoPath
    origin: Origin
    commit: str | None
    working_tree: bool


class CommitObserved(EventBase):
    """A new commit on the followed branch; its file events follow, then CommitCompleted."""

    kind: Literal["commit_observed"] = "commit_observed"
    sha: str = Field(min_length=7)
    parents: tuple[str, ...]
    branch: str
    changed_paths: tuple[RepoPath, ...]
    committed_at: float
    subject: str = ""


class ScanCompleted(EventBase):
    """Barrier: every file of a full scan (or a reconciliation) has been emitted before it.

    Once it is applied, the state reflects ``commit`` plus the work tree as scanned.
    """

    kind: Literal["scan_completed"] = "scan_completed"
    commit: str | None
    branch: str | None
    files: int = Field(ge=0)
    deleted: int = Field(ge=0, default=0)
    full: bool = Field(description="a full scan (True) or a reconciliation from a git diff")
    working_tree_dirty: bool


class CommitCompleted(EventBase):
    """Barrier: every file event of commit ``sha`` has been emitted before it."""

    kind: Literal["commit_completed"] = "commit_completed"
    sha: str = Field(min_length=7)
    branch: str


FileEvent = Annotated[
    FileChanged | FileDeleted | CommitObserved | ScanCompleted | CommitCompleted | LeaseClaimed,
    Field(discriminator="kind"),
]
_FILE_EVENT = TypeAdapter(FileEvent)


def decode_file_event(raw: bytes) -> FileEvent:
    """Parse and validate one message of the file-events topic (raises ValidationError)."""
    return _FILE_EVENT.validate_json(raw)


def encode(event: Contract) -> bytes:
    """The message value of an event or a status."""
    return event.model_dump_json().encode()


class SourceStatus(Contract):
    """A producer's heartbeat on the sources topic: what it has emitted so far.

    Sent after every batch of events and every few seconds while idle. Readers compare
    it with the last event the state reflects to compute pending events and lag
    exactly. ``batch_first_seq``/``batch_started_at`` say when the last batch of events
    (``batch_first_seq..last_seq``) was emitted; an idle heartbeat repeats them.
    ``epoch`` with ``producer`` is the session's lease: readers count progress only from
    the greatest lease, and a producer that sees a greater one than its own stops and
    says so with a last status in state ``fenced``.
    """

    v: Literal[1] = 1
    kind: Literal["source_status"] = "source_status"
    repo: str = Field(min_length=1)
    producer: str = Field(min_length=1)
    root: str = Field(description="the repository's path on the producer's machine")
    branch: str | None
    head_commit: str | None
    working_tree_dirty: bool
    last_seq: int = Field(ge=0)
    batch_first_seq: int = Field(ge=1)
    batch_started_at: float
    sent_at: float
    heartbeat_s: float = Field(gt=0, description="the interval of idle heartbeats")
    state: Literal["scanning", "watching", "stopped", "fenced"]
    epoch: int = Field(default=1, ge=1, description="the lease epoch of the session")


def decode_source_status(raw: bytes) -> SourceStatus:
    """A status from its message value; raises ``ValidationError``."""
    return SourceStatus.model_validate_json(raw)

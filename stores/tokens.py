"""Access tokens: the contract the ``token`` verbs publish and every query replica folds.

A token is a random secret (``secrets.token_urlsafe(32)``: 256 bits) shown once, when it
is made; what is kept is a `TokenRecord`, on the compacted tokens topic keyed by the
token's id, holding the secret's hash and never the secret. The latest record of an id
wins, so a revocation is one more record (``revoked=True``), which every replica folds
within its poll of the topic (issue 19).

Why a plain SHA-256 and not a slow password hash (scrypt, argon2): a slow hash protects
a *guessable* secret against a stolen hash list by making each guess cost; a 256-bit
random secret cannot be guessed however cheap a guess is, and the check runs on every
request, where a slow hash would cost milliseconds per call. The hash is compared in
constant time (`hmac.compare_digest`, `TokenBook`).

The book is here, below both its readers: the query replicas (query/auth/book.py, which
answers a `Principal`) and the processes with no HTTP of their own, whose ``/metrics``
asks a ``metrics`` token too (deploy/metrics_server.py).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from typing import Literal

from pydantic import Field, TypeAdapter, field_validator

from stores.records import Record

Scope = Literal["read", "admin", "metrics"]
SCOPES: tuple[Scope, ...] = ("read", "admin", "metrics")
"""``read``: the queries (HTTP, MCP, dashboard); ``admin``: ranking profiles, dead
letters, the token routes; ``metrics``: ``/metrics``."""

TOKEN_PREFIX = "gzt_"
"""Every secret starts so: a scanner (or a person) recognizes one in a log or a paste."""

_NAMESPACE = uuid.UUID("5b0e7a52-3f57-4d0c-9d55-8f0ef6b7f0a1")


class TokenRecord(Record):
    """One token as the deployment keeps it: who it is for, what it may do, and the hash
    of its secret; ``revoked``: refused from now on (the last record of an id wins)."""

    v: Literal[1] = 1
    kind: Literal["token"] = "token"
    id: str = Field(min_length=1, description="uuid5 of the name: one token per name")
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._-]+$")
    hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the secret, hex")
    scopes: tuple[Scope, ...] = Field(min_length=1)
    repos: tuple[str, ...] = Field(
        min_length=1, description="fnmatch globs on repository ids and names; '*': all"
    )
    created_at: float
    revoked: bool = False

    @field_validator("repos")
    @classmethod
    def _globs(cls, repos: tuple[str, ...]) -> tuple[str, ...]:
        if any(not g.strip() for g in repos):
            raise ValueError("an empty repository glob")
        return repos


def token_id(name: str) -> str:
    """The id of the token named ``name``: creating a token again under a name replaces
    (rotates) the one before, since both are one key on the compacted topic."""
    return str(uuid.uuid5(_NAMESPACE, name))


def new_secret() -> str:
    """A fresh secret: 256 random bits, URL-safe, with the `TOKEN_PREFIX`."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    """The hex SHA-256 of a secret (see the module's docstring for why not slower)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_globs(text: str) -> tuple[str, ...]:
    """``'payments-*, shared-*'`` -> ``('payments-*', 'shared-*')``; ValueError if none."""
    globs = tuple(dict.fromkeys(g.strip() for g in text.split(",") if g.strip()))
    if not globs:
        raise ValueError("name at least one repository glob ('*': every repository)")
    return globs


class TokenBook:
    """Every token record folded: the latest of each id (a revocation is a record with
    ``revoked``), so the book is what a compacted topic's tail leaves.

    Safe to read from another thread than the one folding (the metrics endpoint
    answers in its server's threads): `apply` replaces the mapping, never changes it
    in place, so a reader iterates one consistent version of it."""

    def __init__(self) -> None:
        self._records: dict[str, TokenRecord] = {}

    def apply(self, record: TokenRecord) -> None:
        """Fold one record: it replaces the one of its id (the topic keeps a key's
        records in order, so the last one read is the last one written)."""
        self._records = {**self._records, record.id: record}

    def clear(self) -> None:
        self._records = {}

    @property
    def records(self) -> list[TokenRecord]:
        """Every token's latest record, by name."""
        return sorted(self._records.values(), key=lambda r: (r.name, r.id))

    def live(self) -> int:
        """How many tokens are not revoked."""
        return sum(not r.revoked for r in self._records.values())

    def record_for(self, bearer: str | None) -> TokenRecord | None:
        """The record of the live token whose secret is ``bearer``; None otherwise.

        Every live record's hash is compared, in constant time, whatever matched before:
        the time taken says nothing about which hash, or how much of one, matched."""
        if not bearer:
            return None
        digest = hash_secret(bearer).encode()
        found: TokenRecord | None = None
        for record in self._records.values():
            if hmac.compare_digest(digest, record.hash.encode()) and not record.revoked:
                found = record
        return found


_TOKEN = TypeAdapter(TokenRecord)


def decode_token(raw: bytes) -> TokenRecord:
    """A record from its message value; raises ``ValidationError``."""
    return _TOKEN.validate_json(raw)


def encode_token(record: TokenRecord) -> bytes:
    """The message value of a record (its key: ``record.id``)."""
    return record.model_dump_json().encode()

"""Per-session Ed25519 signatures of producer events, so that a forged event is recognised.

Each producer session makes a fresh key pair (``SessionKey.generate``); its public half
travels in the session's ``LeaseClaimed`` and the worker keeps it with the lease. Every
event the session emits, the claim included, is signed with the private half.

The signed bytes (the canonical form) are the event's JSON encoding as the contracts
write it (``events.encode``: pydantic's ``model_dump_json``, fields in declaration
order, no whitespace, bytes in base64) with ``sig`` set to ``""``. The worker verifies
by encoding the decoded model again the same way, so a field changed in transit, an
event moved to another repository or sequence number, or one signed by any other key
fails. Both sides must therefore run the same contract (``v``) and serializer.

A signature proves which session wrote an event, not that the session may own the
repository: anyone who can write to the topic can claim a lease (issue 15 leaves
authorizing claims to the broker's ACLs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from producers.events import EventBase

E = TypeVar("E", bound=EventBase)


def signed_bytes(event: EventBase) -> bytes:
    """The canonical form of ``event``: its JSON encoding with ``sig`` set to ``""``."""
    return event.model_copy(update={"sig": ""}).model_dump_json().encode()


@dataclass(frozen=True, slots=True)
class SessionKey:
    """One producer session's signing key."""

    private: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> SessionKey:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> SessionKey:
        """A key from 32 bytes: deterministic, for tests and fixtures."""
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @property
    def public_key(self) -> str:
        """The public half, 32 bytes as 64 hex digits (what a LeaseClaimed carries)."""
        raw = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return raw.hex()

    def sign(self, event: E) -> E:
        """``event`` with ``sig`` set to this key's signature of its canonical form."""
        return event.model_copy(update={"sig": self.private.sign(signed_bytes(event)).hex()})


def verify(event: EventBase, public_key: str) -> bool:
    """True when ``event.sig`` is ``public_key``'s signature of the event's canonical form;
    False for any other signature, a malformed one, or a malformed key."""
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key))
        key.verify(bytes.fromhex(event.sig), signed_bytes(event))
    except (InvalidSignature, ValueError):
        return False
    return True


__all__ = ["SessionKey", "signed_bytes", "verify"]

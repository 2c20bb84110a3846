"""Per-session signatures: an event verifies against its session's key only."""

from __future__ import annotations

from producers.events import FileChanged, decode_file_event, encode
from producers.signing import SessionKey, signed_bytes, verify
from tests.factories import Stamp


def test_a_signed_event_verifies_after_a_round_trip_through_its_encoding() -> None:
    s = Stamp()
    event = s.changed("a.py", "def f")
    again = decode_file_event(encode(event))
    assert again == event and len(again.sig) == 128
    assert verify(again, s.key.public_key) is True
    assert signed_bytes(again) == encode(event.model_copy(update={"sig": ""}))


def test_a_tampered_event_or_another_key_fails() -> None:
    s = Stamp()
    event = s.changed("a.py", "def f")
    tampered = event.model_copy(update={"path": "b.py"})
    assert verify(tampered, s.key.public_key) is False
    moved = event.model_copy(update={"seq": event.seq + 1})
    assert verify(moved, s.key.public_key) is False
    other = SessionKey.from_seed(b"o" * 32)
    assert verify(event, other.public_key) is False
    assert verify(other.sign(event), s.key.public_key) is False
    assert verify(event.model_copy(update={"sig": "zz"}), s.key.public_key) is False
    assert verify(event, "00") is False


def test_a_claim_is_signed_by_the_key_it_carries() -> None:
    claim = Stamp(producer="p9").claim()
    assert claim.seq == 1 and claim.kind == "lease_claimed"
    assert verify(claim, claim.public_key) is True
    assert isinstance(Stamp().changed("x.py", "X"), FileChanged)

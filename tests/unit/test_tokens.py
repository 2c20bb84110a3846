"""Tokens: the record contract, hashing, and the book's folding and authentication."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from query.auth.book import TokenBook
from query.auth.principal import EVERYONE, NOBODY, Principal
from stores.tokens import (
    TOKEN_PREFIX,
    TokenRecord,
    decode_token,
    encode_token,
    hash_secret,
    new_secret,
    parse_globs,
    token_id,
)


def record(name: str, secret: str, **fields: object) -> TokenRecord:
    values: dict[str, object] = {
        "id": token_id(name),
        "name": name,
        "hash": hash_secret(secret),
        "scopes": ("read",),
        "repos": ("*",),
        "created_at": 100.0,
    }
    values.update(fields)
    return TokenRecord.model_validate(values)


def test_hash_is_the_hex_sha256() -> None:
    assert hash_secret("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_a_secret_is_prefixed_random_and_long() -> None:
    one, two = new_secret(), new_secret()
    assert one.startswith(TOKEN_PREFIX) and two.startswith(TOKEN_PREFIX)
    assert one != two
    assert len(one) == len(TOKEN_PREFIX) + 43  # 32 bytes, base64url without padding


def test_the_id_is_the_name_s_and_stable() -> None:
    assert token_id("ci-agent") == token_id("ci-agent")
    assert token_id("ci-agent") != token_id("ci-agent2")


def test_globs_are_parsed_and_deduplicated() -> None:
    assert parse_globs(" payments/*, shared-* ,payments/*") == ("payments/*", "shared-*")
    with pytest.raises(ValueError, match="at least one repository glob"):
        parse_globs(" , ")


def test_a_record_round_trips_and_holds_no_secret() -> None:
    held = record("ci", "gzt_secret", scopes=("read", "metrics"), repos=("a-*",))
    raw = encode_token(held)
    assert decode_token(raw) == held
    assert b"gzt_secret" not in raw


def test_a_record_refuses_an_unknown_scope_a_bad_hash_and_extra_fields() -> None:
    with pytest.raises(ValidationError):
        record("ci", "x", scopes=("root",))
    with pytest.raises(ValidationError):
        record("ci", "x", hash="not-hex")
    with pytest.raises(ValidationError):
        record("ci", "x", plaintext="x")
    with pytest.raises(ValidationError):
        record("ci", "x", repos=())
    with pytest.raises(ValidationError):
        record("a name", "x")


def test_may_read_matches_globs_on_ids_and_names() -> None:
    who = Principal("ci", frozenset({"read"}), ("payments/*", "shared-*"))
    assert [who.may_read(r) for r in ("payments/api", "shared-lib", "billing", "Shared-x")] == [
        True,
        True,
        False,
        False,
    ]
    assert EVERYONE.may_read("anything") and not NOBODY.may_read("anything")


def test_the_book_authenticates_a_live_secret_only() -> None:
    book = TokenBook()
    book.apply(record("ci", "gzt_one", scopes=("read", "metrics"), repos=("a-*",)))
    book.apply(record("ops", "gzt_two", scopes=("admin",)))
    assert book.authenticate("gzt_one") == Principal("ci", frozenset({"read", "metrics"}), ("a-*",))
    assert book.authenticate("gzt_two") == Principal("ops", frozenset({"admin"}), ("*",))
    assert book.authenticate("gzt_three") is None
    assert book.authenticate("") is None
    assert book.authenticate(None) is None
    assert book.live() == 2


def test_the_latest_record_of_an_id_wins_and_a_revocation_is_one() -> None:
    book = TokenBook()
    first = record("ci", "gzt_one")
    book.apply(first)
    book.apply(first.model_copy(update={"revoked": True}))
    assert book.authenticate("gzt_one") is None
    assert book.live() == 0
    book.apply(record("ci", "gzt_rotated", created_at=200.0))  # created again: rotated
    assert book.authenticate("gzt_one") is None
    assert book.authenticate("gzt_rotated") == Principal("ci", frozenset({"read"}), ("*",))
    assert [(r.name, r.revoked, r.created_at) for r in book.records] == [("ci", False, 200.0)]


def test_the_cli_record_keeps_the_hash_and_list_shows_neither() -> None:
    from deploy.token_cli import describe, new_record

    secret, made = new_record("ci-agent", "payments-*, shared-*", ["read", "read"], 1000.0)
    assert (made.name, made.scopes, made.repos, made.created_at) == (
        "ci-agent",
        ("read",),
        ("payments-*", "shared-*"),
        1000.0,
    )
    assert made.hash == hash_secret(secret) and made.id == token_id("ci-agent")
    line = describe(made, 1000.0 + 2 * 86400)
    assert line == "ci-agent\tactive\tscopes=read\trepos=payments-*,shared-*\tcreated 2.0 days ago"
    assert secret not in line and made.hash not in line
    with pytest.raises(ValueError, match="name"):
        new_record("a name", "*", ["read"], 0.0)

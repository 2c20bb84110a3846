"""``gazetteer token create|list|revoke``: the access tokens, kept on the tokens topic.

``create --name NAME --repos GLOBS --scope SCOPE...`` makes a secret, prints it once
(stdout, alone on its line, so that a script can take it) and publishes only its hash
(stores/tokens.py); creating a name again replaces its token (a rotation: the old secret
is refused once the replicas fold the new record). ``list`` prints each token's name,
scopes, repositories, age and state, never a secret or a hash; ``revoke NAME`` publishes
the token's record again with ``revoked``. Every query replica folds the topic, so a
change is in effect everywhere within a poll of it (seconds).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer
from pydantic import ValidationError

from deploy.parts import run_part
from deploy.runtime import Cluster, connect, send_record
from deploy.settings import Settings
from stores.token_follower import fold, topic_partitions
from stores.tokens import (
    TokenBook,
    TokenRecord,
    encode_token,
    hash_secret,
    new_secret,
    parse_globs,
    token_id,
)

READ_TIMEOUT_S = 30.0


async def read_book(settings: Settings, cluster: Cluster) -> TokenBook:
    """Every record on the tokens topic up to its end, folded."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    book = TokenBook()
    try:
        topic = settings.topics.tokens
        partitions = await topic_partitions(consumer, topic)
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await cluster.end_offsets(consumer, partitions)
        deadline = time.monotonic() + READ_TIMEOUT_S
        while [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the tokens topic was not read to its end in {READ_TIMEOUT_S} s"
                )
            batches = await consumer.getmany(timeout_ms=500)
            for messages in batches.values():
                for message in messages:
                    fold(book, message.value)
    finally:
        await consumer.stop()
    return book


async def publish(settings: Settings, cluster: Cluster, record: TokenRecord) -> None:
    await send_record(
        cluster.bootstrap, settings.topics.tokens, record.id.encode(), encode_token(record)
    )


def describe(record: TokenRecord, now: float) -> str:
    """One line of ``token list``: no secret, no hash."""
    age_days = max(0.0, now - record.created_at) / 86400
    state = "revoked" if record.revoked else "active"
    return (
        f"{record.name}\t{state}\tscopes={','.join(record.scopes)}\t"
        f"repos={','.join(record.repos)}\tcreated {age_days:.1f} days ago"
    )


async def _create(settings: Settings, bootstrap: str, record: TokenRecord) -> None:
    await publish(settings, await connect(settings, bootstrap), record)


async def _list(settings: Settings, bootstrap: str, out: list[TokenRecord]) -> None:
    out.extend((await read_book(settings, await connect(settings, bootstrap))).records)


async def _revoke(settings: Settings, bootstrap: str, name: str, out: list[TokenRecord]) -> None:
    cluster = await connect(settings, bootstrap)
    held = {r.name: r for r in (await read_book(settings, cluster)).records}
    record = held.get(name)
    if record is None or record.revoked:
        return
    revoked = record.model_copy(update={"revoked": True})
    await publish(settings, cluster, revoked)
    out.append(revoked)


def new_record(name: str, repos: str, scopes: Sequence[str], now: float) -> tuple[str, TokenRecord]:
    """A fresh secret and the record that keeps its hash; ValueError on bad input."""
    secret = new_secret()
    try:
        record = TokenRecord.model_validate(
            {
                "id": token_id(name),
                "name": name,
                "hash": hash_secret(secret),
                "scopes": tuple(dict.fromkeys(scopes)),
                "repos": parse_globs(repos),
                "created_at": now,
            }
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(problems) from exc
    return secret, record


def run(args: argparse.Namespace, settings: Settings) -> int:
    verb = f"gazetteer token {args.token_verb}"
    if settings.bootstrap is None:
        print(f"{verb}: needs --broker kafka://host:port", file=sys.stderr)
        return 2
    if args.token_verb == "create":
        try:
            secret, record = new_record(args.name, args.repos, args.scope, time.time())
        except ValueError as exc:
            print(f"{verb}: {exc}", file=sys.stderr)
            return 2
        code = run_part("token", _create(settings, settings.bootstrap, record))
        if code == 0:
            print(f"token {record.name} created; its secret, shown only now:", file=sys.stderr)
            print(secret, flush=True)
        return code
    found: list[TokenRecord] = []
    if args.token_verb == "list":
        code = run_part("token", _list(settings, settings.bootstrap, found))
        now = time.time()
        for record in found:
            print(describe(record, now))
        return code
    code = run_part("token", _revoke(settings, settings.bootstrap, args.name, found))
    if code:
        return code
    if not found:
        print(f"{verb}: no active token named {args.name!r}", file=sys.stderr)
        return 1
    print(f"token {args.name} revoked")
    return 0

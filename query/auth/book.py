"""The token book: every token record folded, answering who a bearer secret is.

The latest record of a token id wins (a revocation is a record with ``revoked``), so
the book is what a compacted topic's tail leaves; a replica folds it as it folds the
ranking profiles (query/materializer.py), and a revoked secret is refused from the
moment its record is folded.
"""

from __future__ import annotations

import hmac

from query.auth.principal import Principal
from stores.tokens import TokenRecord, hash_secret


class TokenBook:
    def __init__(self) -> None:
        self._records: dict[str, TokenRecord] = {}

    def apply(self, record: TokenRecord) -> None:
        """Fold one record: it replaces the one of its id (the topic keeps a key's
        records in order, so the last one read is the last one written)."""
        self._records[record.id] = record

    def clear(self) -> None:
        self._records.clear()

    @property
    def records(self) -> list[TokenRecord]:
        """Every token's latest record, by name."""
        return sorted(self._records.values(), key=lambda r: (r.name, r.id))

    def live(self) -> int:
        """How many tokens are not revoked."""
        return sum(not r.revoked for r in self._records.values())

    def authenticate(self, bearer: str | None) -> Principal | None:
        """The principal of a live token whose secret is ``bearer``; None otherwise.

        Every live record's hash is compared, in constant time, whatever matched before:
        the time taken says nothing about which hash, or how much of one, matched."""
        if not bearer:
            return None
        digest = hash_secret(bearer).encode()
        found: TokenRecord | None = None
        for record in self._records.values():
            if hmac.compare_digest(digest, record.hash.encode()) and not record.revoked:
                found = record
        if found is None:
            return None
        return Principal(found.name, frozenset(found.scopes), found.repos)

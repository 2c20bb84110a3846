"""The token book of a query replica: the records' book (stores/tokens.py), answering
with the `Principal` a request runs as.

A replica folds the tokens topic into it as it folds the ranking profiles
(query/materializer.py); a revoked secret is refused from the moment its record is
folded.
"""

from __future__ import annotations

from query.auth.principal import Principal
from stores.tokens import TokenBook as RecordBook


class TokenBook(RecordBook):
    def authenticate(self, bearer: str | None) -> Principal | None:
        """The principal of a live token whose secret is ``bearer``; None otherwise
        (compared in constant time over every live hash: `RecordBook.record_for`)."""
        found = self.record_for(bearer)
        if found is None:
            return None
        return Principal(found.name, frozenset(found.scopes), found.repos)

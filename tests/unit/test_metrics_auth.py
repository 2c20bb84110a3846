"""The worker's and the producers' /metrics with authentication on (issue 19): the WSGI
guard's exact answers, called as a WSGI server calls it, and the records' book below it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from wsgiref.types import StartResponse, WSGIEnvironment

from deploy.metrics_server import REALM, bearer, guarded
from stores.token_follower import fold
from stores.tokens import TokenBook, TokenRecord, encode_token, hash_secret, token_id

Answer = tuple[str, dict[str, str], bytes]


def record(name: str, secret: str, *scopes: str, revoked: bool = False) -> TokenRecord:
    return TokenRecord.model_validate(
        {
            "id": token_id(name),
            "name": name,
            "hash": hash_secret(secret),
            "scopes": scopes,
            "repos": ("*",),
            "created_at": 100.0,
            "revoked": revoked,
        }
    )


def metrics_app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"# TYPE gazetteer_up gauge\n"]


def call(book: TokenBook, authorization: str | None = None) -> Answer:
    environ: WSGIEnvironment = {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics"}
    if authorization is not None:
        environ["HTTP_AUTHORIZATION"] = authorization
    started: list[tuple[str, list[tuple[str, str]]]] = []

    def start_response(
        status: str, headers: list[tuple[str, str]], exc_info: object = None, /
    ) -> Callable[[bytes], object]:
        started.append((status, headers))
        return lambda data: None

    body = b"".join(guarded(metrics_app, book)(environ, start_response))
    status, headers = started[0]
    return status, dict(headers), body


def book_of(*records: TokenRecord) -> TokenBook:
    book = TokenBook()
    for held in records:
        book.apply(held)
    return book


BOOK = book_of(record("prom", "gzt_m", "metrics"), record("ci", "gzt_r", "read"))


def test_no_token_is_401_with_the_bearer_challenge() -> None:
    assert call(BOOK) == (
        "401 Unauthorized",
        {
            "Content-Type": "application/json",
            "Content-Length": "37",
            "WWW-Authenticate": 'Bearer realm="gazetteer"',
        },
        b'{"detail": "authentication required"}',
    )
    assert call(BOOK, "Basic dXNlcjpwYXNz")[0:2] == call(BOOK)[0:2]  # not a bearer: none


def test_a_wrong_token_is_401_invalid_token() -> None:
    status, headers, body = call(BOOK, "Bearer gzt_wrong")
    assert status == "401 Unauthorized"
    assert headers["WWW-Authenticate"] == 'Bearer realm="gazetteer", error="invalid_token"'
    assert body == b'{"detail": "invalid or revoked token"}'


def test_a_token_without_the_metrics_scope_is_403() -> None:
    status, headers, body = call(BOOK, "Bearer gzt_r")
    assert status == "403 Forbidden"
    assert headers["WWW-Authenticate"] == (
        'Bearer realm="gazetteer", error="insufficient_scope", scope="metrics"'
    )
    assert body == b'{"detail": "this token lacks the \'metrics\' scope"}'


def test_the_metrics_token_gets_the_metrics_whatever_the_scheme_s_case() -> None:
    assert call(BOOK, "Bearer gzt_m") == (
        "200 OK",
        {"Content-Type": "text/plain"},
        b"# TYPE gazetteer_up gauge\n",
    )
    assert call(BOOK, "bearer  gzt_m ")[0] == "200 OK"


def test_a_revocation_folded_refuses_the_token_from_the_next_scrape() -> None:
    book = book_of(record("prom", "gzt_m", "metrics"))
    assert call(book, "Bearer gzt_m")[0] == "200 OK"
    assert fold(book, encode_token(record("prom", "gzt_m", "metrics", revoked=True)))
    assert call(book, "Bearer gzt_m")[0] == "401 Unauthorized"


def test_the_follower_skips_what_is_no_token_record() -> None:
    book = TokenBook()
    assert not fold(book, b'{"kind": "token"}')
    assert fold(book, None)  # a tombstone
    assert book.records == []


def test_the_records_book_answers_the_live_record() -> None:
    held = record("prom", "gzt_m", "metrics")
    book = book_of(held, record("old", "gzt_o", "metrics", revoked=True))
    assert book.record_for("gzt_m") == held
    assert book.record_for("gzt_o") is None
    assert book.record_for(None) is None and book.record_for("") is None
    assert book.live() == 1


def test_the_header_is_parsed_as_the_query_service_parses_it() -> None:
    from query.auth.middleware import REALM as QUERY_REALM

    assert REALM == QUERY_REALM
    assert [bearer(None), bearer("Bearer x"), bearer("Basic x"), bearer("BEARER  y ")] == [
        None,
        "x",
        "",
        "y",
    ]

"""Authentication on every route: one pure ASGI middleware (issue 19).

A request's credential is its ``Authorization: Bearer`` header (the REST API, ``/mcp``,
``/metrics``, the CLI and the stdio MCP server send it), else the dashboard's cookie,
set by the login form this middleware serves at ``/dashboard`` to a browser that has
none. The token book (query/auth/book.py) says whose it is; the route's scope
(query/auth/routes.py) whether it may:

- none, a wrong one or a revoked one: 401 with ``WWW-Authenticate: Bearer``;
- a valid token without the route's scope: 403 (``error="insufficient_scope"``);
- else the request runs as the token's `Principal`: in ``scope["state"]["principal"]``
  (for the middlewares inside this one: the audit log reads ``.name`` there) and as the
  service's reader (query/service/access.py), which filters every answer by the
  token's repositories.

An open route (``/health``, the API's description, the dashboard's assets) runs as
the token's principal when one is given, else as `NOBODY`, who reads no repository,
and with no principal in the state (the rate limit counts such a caller by address).

The cookie holds the token itself (HttpOnly: no script reads it; SameSite=Strict: no
other site's page sends it; Secure behind TLS), so any replica authenticates it, as it
does the header, with no session to share between replicas.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from query.auth.book import TokenBook
from query.auth.principal import NOBODY, Principal
from query.auth.routes import DASHBOARD_PAGE, LOGIN_PATH, LOGOUT_PATH, required_scope
from query.service.access import reading_as

COOKIE = "gazetteer_token"
COOKIE_MAX_AGE_S = 12 * 3600
MAX_LOGIN_BYTES = 8192
REALM = 'Bearer realm="gazetteer"'


class Authentication:
    """``book``: the replica's token book, as the materializer folds it (a revocation
    holds from the next request after its record is folded)."""

    def __init__(self, app: ASGIApp, book: TokenBook) -> None:
        self.app = app
        self.book = book

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if scope["type"] == "http" and path == LOGIN_PATH and scope["method"] == "POST":
            await self._login(scope, receive, send)
            return
        if path == LOGOUT_PATH:
            await _logged_out()(scope, receive, send)
            return
        given = credential(Headers(scope=scope))
        principal = self.book.authenticate(given)
        need = required_scope(path)
        if need is None:
            if path == DASHBOARD_PAGE and (principal is None or not principal.may("read")):
                await login_page(401 if given else 200, refused=given is not None)(
                    scope, receive, send
                )
                return
            await self._run(principal, scope, receive, send)
        elif principal is None:
            invalid = ', error="invalid_token"' if given else ""
            detail = "invalid or revoked token" if given else "authentication required"
            await _refuse(scope, receive, send, 401, detail, REALM + invalid)
        elif not principal.may(need):
            challenge = f'{REALM}, error="insufficient_scope", scope="{need}"'
            await _refuse(
                scope, receive, send, 403, f"this token lacks the {need!r} scope", challenge
            )
        else:
            await self._run(principal, scope, receive, send)

    async def _run(
        self, principal: Principal | None, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """The request as ``principal``, which the middlewares inside find in the state;
        None (an open route, no token): as `NOBODY`, in no state, so that the rate limit
        counts such a caller by its address, not every one of them as one."""
        if principal is not None:
            scope.setdefault("state", {})["principal"] = principal
        with reading_as(principal or NOBODY):
            await self.app(scope, receive, send)

    async def _login(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The login form's POST: a token with ``read`` sets the cookie, and back to the
        dashboard; any other answer is the form again, saying it was refused."""
        body = await _body(receive, MAX_LOGIN_BYTES)
        secret = (parse_qs(body.decode(errors="replace")).get("token") or [""])[0].strip()
        principal = self.book.authenticate(secret)
        if principal is None or not principal.may("read"):
            await login_page(401, refused=True)(scope, receive, send)
            return
        answer = RedirectResponse(DASHBOARD_PAGE, status_code=303)
        answer.set_cookie(
            COOKIE,
            secret,
            max_age=COOKIE_MAX_AGE_S,
            path="/",
            httponly=True,
            samesite="strict",
            secure=scope.get("scheme") == "https",
        )
        await answer(scope, receive, send)


def credential(headers: Headers) -> str | None:
    """The bearer token of a request, else its dashboard cookie; None: neither."""
    authorization = headers.get("authorization")
    if authorization is not None:
        scheme, _, token = authorization.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""
    cookies = cookie_parser(headers.get("cookie", ""))
    return cookies.get(COOKIE) or None


async def _body(receive: Receive, limit: int) -> bytes:
    """The request body, cut at ``limit`` bytes (a login is a token: a few dozen)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message: Message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks) if size <= limit else b""


async def _refuse(
    scope: Scope, receive: Receive, send: Send, status: int, detail: str, challenge: str
) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": detail})
        return
    answer = Response(
        json.dumps({"detail": detail}),
        status_code=status,
        media_type="application/json",
        headers={"WWW-Authenticate": challenge},
    )
    await answer(scope, receive, send)


def _logged_out() -> Response:
    answer = RedirectResponse(DASHBOARD_PAGE, status_code=303)
    answer.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return answer


_FORM = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Gazetteer: sign in</title></head>
<body style="font-family: sans-serif; max-width: 28rem; margin: 4rem auto">
<h1>Gazetteer</h1>
<p>The dashboard needs an access token with the <code>read</code> scope
(<code>gazetteer token create</code>).</p>
{refused}
<form method="post" action="{action}">
<label>Token <input name="token" type="password" autocomplete="off" required
 style="width: 100%"></label>
<p><button type="submit">Sign in</button></p>
</form></body></html>
"""


def login_page(status: int, *, refused: bool) -> HTMLResponse:
    """The dashboard's login form; ``refused``: says the token given was not accepted."""
    note = "<p role='alert'><strong>That token was not accepted.</strong></p>" if refused else ""
    return HTMLResponse(
        _FORM.format(refused=note, action=LOGIN_PATH),
        status_code=status,
        headers={
            "Cache-Control": "no-store",
            "WWW-Authenticate": REALM,
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
            "form-action 'self'; frame-ancestors 'none'",
        },
    )

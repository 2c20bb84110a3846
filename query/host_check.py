"""Which ``Host`` the query service answers to: the guard against DNS rebinding.

A web page can make its own name resolve to 127.0.0.1 (or to a private address) and
then read the service from the visitor's browser: same origin to the browser, the
attacker's name in the ``Host`` header. So every route (the REST API, the dashboard,
``/metrics``, ``/mcp``) answers only to the names the service is reachable as, and
refuses any other with 421 Misdirected Request (the MCP SDK's answer); a browser's
``Origin``, when sent, must name an allowed host too (else 403).

`host_rule` says which names those are, from the bind address and the deployment's
own names (``GAZETTEER_ALLOWED_HOSTS``):

- bound to loopback: ``localhost``, ``127.0.0.1`` and ``[::1]``, any port;
- bound to every interface (``0.0.0.0``, ``::``): any IP address literal (an address
  cannot be rebound: a page that reaches the service by its address is the address's
  origin) and ``localhost``, which is what in-pod probes and a Kubernetes ``httpGet``
  probe send; a DNS name only when listed;
- bound to one address or name: that one;

plus the listed names in every case; ``*`` among them accepts any Host (behind a proxy
that checks it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from query.addresses import is_address, is_loopback

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})


@dataclass(frozen=True, slots=True)
class HostRule:
    """``names``: host names and addresses accepted, lowercase, IPv6 without brackets;
    ``any_address``: any IP literal too; ``any_host``: no check."""

    names: frozenset[str]
    any_address: bool = False
    any_host: bool = False

    def allows(self, authority: str) -> bool:
        """Whether a ``Host`` header (``name``, ``name:port``, ``[v6]:port``) is ours."""
        if self.any_host:
            return True
        host = host_of(authority)
        if host is None:
            return False
        return host in self.names or (self.any_address and is_address(host))

    @property
    def own_name(self) -> str:
        """A Host this rule accepts, for the calls the service makes to itself (the MCP
        tools call the API in-process, through this check)."""
        if self.any_host or "localhost" in self.names or not self.names:
            return "localhost"
        name = min(self.names)
        return f"[{name}]" if ":" in name else name

    def allows_origin(self, origin: str) -> bool:
        """Whether a browser's ``Origin`` (``http://name:port``) names an allowed host."""
        if self.any_host:
            return True
        scheme, sep, authority = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and self.allows(authority)


def host_rule(bind: str, listed: Iterable[str] = ()) -> HostRule:
    """The hosts a service bound to ``bind`` answers to, plus the ``listed`` names."""
    names = {n.strip().lower().strip("[]") for n in listed if n.strip()}
    if "*" in names:
        return HostRule(frozenset(names - {"*"}), any_host=True)
    address = bind.strip().lower().strip("[]")
    if address in WILDCARD_BINDS:
        return HostRule(frozenset(names | {"localhost"}), any_address=True)
    if address == "localhost" or is_loopback(address):
        return HostRule(frozenset(names | set(LOOPBACK_NAMES)))
    return HostRule(frozenset(names | {address}))


def host_of(authority: str) -> str | None:
    """The host of a ``Host`` header, lowercase, without port or brackets; None when the
    header is not a host with an optional numeric port."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        host, sep, rest = authority[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return host if is_address(host) else None
    host, sep, port = authority.partition(":")
    if sep and not port.isdigit():
        return None
    return host.rstrip(".") or None


class HostCheck:
    """ASGI middleware: `HostRule` on every HTTP and WebSocket request (a pure ASGI
    wrapper, so streamed answers such as the dashboard's events pass through as they
    are)."""

    def __init__(self, app: ASGIApp, rule: HostRule) -> None:
        self.app = app
        self.rule = rule

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self.refusal(scope) if scope["type"] in ("http", "websocket") else None
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send(
                {"type": "websocket.close", "code": 1008, "reason": bytes(refusal.body).decode()}
            )
        else:
            await refusal(scope, receive, send)

    def refusal(self, scope: Scope) -> PlainTextResponse | None:
        headers = Headers(scope=scope)
        if not self.rule.allows(headers.get("host", "")):
            return PlainTextResponse("Invalid Host header", status_code=421)
        origin = headers.get("origin")
        if origin is not None and not self.rule.allows_origin(origin):
            return PlainTextResponse("Invalid Origin header", status_code=403)
        return None

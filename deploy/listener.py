"""The query service's listening socket, bound before anything serves on it.

Its own small module so that ``gazetteer up``'s supervisor binds the socket (and hands
it to the query process it starts) without importing the query service (issue 15).
"""

from __future__ import annotations

import socket


def listen(host: str, preferred: int) -> socket.socket:
    """A bound, listening socket: on ``preferred`` if it is free, else on any free port.

    Binding here, not in uvicorn, leaves no gap between choosing the port and taking it,
    so two services started at once never pick the same one.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for port in (preferred, 0) if preferred else (0,):
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP, and
        # with Nagle on, a request that follows another within ~40 ms waits ~40 ms.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()
            continue
        sock.listen(128)
        sock.setblocking(False)
        return sock
    raise OSError(f"no free port on {host}")

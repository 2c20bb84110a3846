"""Whether a host is an IP address, and a loopback one: for the Host check
(query/host_check.py) and the settings of every process (which import no web
framework)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    return is_address(host) and ipaddress.ip_address(host).is_loopback


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True

"""Our files on disk, framed alike: the state snapshots and the churn ledgers.

A framed file is a magic line, one JSON header line and a zlib-compressed body. The
header holds the format version, the contract's schema fingerprint, the caller's own
fields, and the body's length and sha256, and it is checked by a digest of itself. A
reader gets either the header and the verified body or a `Rejected` that names why:
``not_framed``, ``wrong_version``, ``truncated``, ``checksum`` or ``invalid``. The
reader never gets half a file. The callers put their own names on the reasons
(``not_a_snapshot``, ``not_a_ledger``). Pure: bytes in, values out.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class Rejected(ValueError):
    """A framed file that cannot be trusted; ``reason`` says why, ``detail`` for a person."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


@dataclass(frozen=True, slots=True)
class Frame:
    """How one kind of file is framed: its magic line, the format this build writes and
    reads, and the fingerprint of the contract its body follows."""

    magic: bytes
    version: int
    schema: str
    level: int = 1  # zlib's fastest: a restart reads these files

    def encode(self, fields: Mapping[str, object], body: bytes) -> bytes:
        """The file's bytes: ``fields`` in the header, ``body`` compressed after it."""
        packed = zlib.compress(body, self.level)
        header: dict[str, object] = {
            **fields,
            "format": self.version,
            "schema": self.schema,
            "bytes": len(packed),
            "sha256": hashlib.sha256(packed).hexdigest(),
        }
        header["check"] = header_check(header)
        return self.magic + json.dumps(header, sort_keys=True).encode() + b"\n" + packed

    def header(self, raw: bytes) -> tuple[dict[str, Any], int]:
        """The checked header of ``raw`` (enough of it: the magic and the first line) and
        where its body starts."""
        if not raw.startswith(self.magic):
            raise Rejected("not_framed", f"no {self.magic.strip().decode()} magic")
        end = raw.find(b"\n", len(self.magic))
        if end < 0:
            raise Rejected("truncated", "the header line is incomplete")
        try:
            header = json.loads(raw[len(self.magic) : end])
        except ValueError as exc:
            raise Rejected("not_framed", f"header: {exc}") from exc
        if not isinstance(header, dict):
            raise Rejected("not_framed", "the header is not an object")
        if header.get("format") != self.version:
            raise Rejected(
                "wrong_version", f"format {header.get('format')!r}, this build reads {self.version}"
            )
        if header.get("schema") != self.schema:
            raise Rejected("wrong_version", "written by a build with another contract")
        if header.get("check") != header_check(header):
            raise Rejected("checksum", "the header does not check")
        if not isinstance(header.get("bytes"), int) or not isinstance(header.get("sha256"), str):
            raise Rejected("invalid", "the header misses the body's length or checksum")
        return header, end + 1

    def verified(self, raw: bytes) -> tuple[dict[str, Any], memoryview]:
        """The checked header and the still-compressed body, its length and sha256 verified."""
        header, at = self.header(raw)
        body = memoryview(raw)[at:]
        if len(body) != header["bytes"]:
            raise Rejected("truncated", f"body of {len(body)} bytes, header says {header['bytes']}")
        if hashlib.sha256(body).hexdigest() != header["sha256"]:
            raise Rejected("checksum", "the body's sha256 differs from the header's")
        return header, body

    def decode(self, raw: bytes) -> tuple[dict[str, Any], bytes]:
        """The checked header and the verified, decompressed body."""
        header, body = self.verified(raw)
        try:
            return header, zlib.decompress(body)
        except zlib.error as exc:
            raise Rejected("invalid", repr(exc)[:500]) from exc


def header_check(header: Mapping[str, object]) -> str:
    """The digest a header carries of its other fields (``check``)."""
    fields = {k: v for k, v in header.items() if k != "check"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]

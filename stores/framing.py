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
from collections.abc import Mapping, Sequence
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

    def encode_sections(
        self, fields: Mapping[str, object], sections: Sequence[tuple[str, bytes]]
    ) -> bytes:
        """A file whose body is several parts, each compressed on its own and listed in
        the header (``sections``: name, length, sha256), so that a reader inflates and
        verifies only the parts it reads (`Sections`). The header also holds the whole
        body's length and sha256, as `encode`'s does (`verified` checks the whole)."""
        packed = [(name, zlib.compress(body, self.level)) for name, body in sections]
        table = [
            {"name": name, "bytes": len(part), "sha256": hashlib.sha256(part).hexdigest()}
            for name, part in packed
        ]
        whole = b"".join(part for _, part in packed)
        header: dict[str, object] = {
            **fields,
            "sections": table,
            "format": self.version,
            "schema": self.schema,
            "bytes": len(whole),
            "sha256": hashlib.sha256(whole).hexdigest(),
        }
        header["check"] = header_check(header)
        return self.magic + json.dumps(header, sort_keys=True).encode() + b"\n" + whole

    def sections(self, raw: bytes) -> tuple[dict[str, Any], Sections]:
        """The checked header of a file `encode_sections` wrote and its parts, each
        verified and inflated when asked for (`Sections.get`); the parts' lengths must
        add up to the body's."""
        header, body_at = self.header(raw)
        at = body_at
        table = header.get("sections")
        spans: dict[str, tuple[int, int, str]] = {}
        if not isinstance(table, list):
            raise Rejected("invalid", "the header lists no sections")
        for entry in table:
            try:
                name, size, sha = str(entry["name"]), int(entry["bytes"]), str(entry["sha256"])
            except (KeyError, TypeError, ValueError) as exc:
                raise Rejected("invalid", f"section entry: {exc!r}") from exc
            if size < 0 or name in spans:
                raise Rejected("invalid", f"section {name!r} listed twice or of negative length")
            spans[name] = (at, size, sha)
            at += size
        if len(raw) - body_at != header["bytes"]:
            raise Rejected(
                "truncated", f"body of {len(raw) - body_at} bytes, header says {header['bytes']}"
            )
        if at != len(raw):
            raise Rejected("invalid", f"the sections span {at - body_at} bytes of the body")
        return header, Sections(memoryview(raw), spans)

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


@dataclass(frozen=True, slots=True)
class Sections:
    """The parts of a file's body by name (`Frame.sections`), read one at a time."""

    raw: memoryview
    spans: Mapping[str, tuple[int, int, str]]  # name -> (start, length, sha256)

    def __contains__(self, name: object) -> bool:
        return name in self.spans

    def get(self, name: str) -> bytes:
        """The part, verified and inflated; `Rejected` (``invalid``: none of that name;
        ``checksum``; ``invalid``: does not inflate)."""
        span = self.spans.get(name)
        if span is None:
            raise Rejected("invalid", f"no section {name!r}")
        start, size, sha = span
        part = self.raw[start : start + size]
        if hashlib.sha256(part).hexdigest() != sha:
            raise Rejected("checksum", f"section {name!r}: its sha256 differs from the header's")
        try:
            return zlib.decompress(part)
        except zlib.error as exc:
            raise Rejected("invalid", f"section {name!r}: {exc!r}"[:500]) from exc

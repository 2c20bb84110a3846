"""Expected records of the per-language parser tests, built from short arguments."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from textwrap import dedent

from processors.parsing import ParseResult, parse_file
from stores.records import ImportRecord, ReferenceKind, ReferenceRecord, SymbolKind, SymbolRecord

ExportRule = Callable[[str, str], bool]
"""Whether a symbol of this name and signature is exported, by a language's rule."""

Reference = tuple[str, str, str | None, int, int, str | None]


def parsed(path: str, source: str) -> ParseResult:
    """`source`, dedented and without its leading blank lines, parsed as the file at `path`."""
    return parse_file(path, dedent(source).lstrip("\n").encode())


def cuts(source: str) -> Iterator[bytes]:
    """Sixty cuts of `source` as `parsed` reads it, each without a random run of 1-79 bytes."""
    content = dedent(source).lstrip("\n").encode()
    rng = random.Random(20240601)
    for _ in range(60):
        start = rng.randrange(len(content))
        yield content[:start] + content[start + rng.randrange(1, 80) :]


@dataclass(frozen=True)
class Symbols:
    """Builds the SymbolRecords one language's tests expect.

    `exported` is the language's rule, used where a test does not say."""

    exported: ExportRule

    def __call__(
        self,
        qualname: str,
        kind: SymbolKind,
        lines: tuple[int, int],
        signature: str,
        doc: str | None = None,
        *,
        name: str | None = None,
        bases: tuple[str, ...] = (),
        implements: tuple[str, ...] = (),
        exported: bool | None = None,
    ) -> SymbolRecord:
        """The name is the qualname's last part unless given (`namespace A.B` is named "A.B");
        the parent is the qualname before it."""
        name = name or qualname.rpartition(".")[2]
        return SymbolRecord(
            name=name,
            qualname=qualname,
            kind=kind,
            line_start=lines[0],
            line_end=lines[1],
            signature=signature,
            parent=qualname[: -len(name) - 1] or None,
            doc=doc,
            bases=bases,
            implements=implements,
            exported=self.exported(name, signature) if exported is None else exported,
        )


def imported(
    module: str,
    names: tuple[str, ...],
    line: int,
    *,
    level: int = 0,
    alias: str | None = None,
    local_names: tuple[str, ...] = (),
) -> ImportRecord:
    return ImportRecord(
        module=module, names=names, level=level, line=line, alias=alias, local_names=local_names
    )


def ref(
    kind: ReferenceKind, name: str, qualifier: str | None, at: tuple[int, int], scope: str | None
) -> ReferenceRecord:
    return ReferenceRecord(
        name=name, qualifier=qualifier, kind=kind, line=at[0], column=at[1], scope=scope
    )


def references(result: ParseResult) -> list[Reference]:
    """(kind, name, qualifier, line, column, scope) of each reference, in source order."""
    return [(r.kind, r.name, r.qualifier, r.line, r.column, r.scope) for r in result.references]

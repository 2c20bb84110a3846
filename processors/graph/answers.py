"""A file's resolution kept between changes: one answer per distinct question.

References of a file that share qualifier, name and scope resolve alike, so each such
question is resolved once per file. Each answer keeps the lookup keys it asked; when a
change makes some keys' answers different, a dependent file re-resolves only the
questions that asked one of them and reuses the rest, which is what keeps a hub
file's deletion (hundreds of dependents, each asking about a few of its names) cheap.
The bindings of the file's imports are computed anew when a key they asked changed; an
answer that read a local name whose binding changed (a module deleted, an import
re-pointed) is stale too, so only the questions about that name re-resolve.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from processors.graph.bindings import Bindings, ImportBinding
from processors.graph.lookup import Key

if TYPE_CHECKING:
    from processors.graph.tally import FileTally

Question = tuple[str, str | None, str, str | None]
"""("ref", qualifier, name, scope) of a reference; ("type", None, written, scope) of a
base class or interface as a declaration writes it."""

OwnRead = tuple[str | None, str | None]
"""(name, scope): the file's own symbols ``name`` was looked up among from ``scope``
(each enclosing scope, then the top level; None: the enclosing scopes only). Read off
the file's record, not through a lookup key: a change to the file itself makes stale
the answers whose reads name a symbol it changed (``reads_changed``)."""


@dataclass(frozen=True, slots=True)
class Target:
    """What a reference resolves to, and how sure the resolution is."""

    node: str
    path: str
    confidence: str


@dataclass(frozen=True, slots=True)
class Answer:
    targets: tuple[Target, ...]
    keys: tuple[Key, ...]  # the lookup keys it asked
    names: tuple[str, ...]  # the file's import bindings it read ('*': its wildcards)
    own: tuple[OwnRead, ...] = ()  # what it read of the file's own symbols


@dataclass(slots=True)
class FileAnswers:
    binds: Bindings  # the bindings of the file's imports, as the answers saw them
    base: frozenset[Key]  # the lookup keys computing the bindings asked
    answers: dict[Question, Answer] = field(default_factory=dict)
    imports: tuple[ImportBinding, ...] = ()  # the bindings import by import
    tally: FileTally | None = None  # the file's edges as the answers add up (tally.py)


def changed_names(old: Bindings, new: Bindings, among: Set[str] | None = None) -> frozenset[str]:
    """The local names bound differently ('*' when the wildcard imports differ), of
    ``among`` when only those may be (None: of all)."""
    names = old.names.keys() | new.names.keys() if among is None else among
    changed = {name for name in names if old.names.get(name) != new.names.get(name)}
    if old.wildcards != new.wildcards:
        changed.add("*")
    return frozenset(changed)


def reads_changed(own: tuple[OwnRead, ...], changed: Set[str]) -> bool:
    """Whether any of ``own`` may have read one of the ``changed`` qualnames."""
    for name, scope in own:
        holder = scope
        while holder:
            if holder in changed or (name is not None and f"{holder}.{name}" in changed):
                return True
            holder = holder.rpartition(".")[0]
        if name is not None and name in changed:
            return True
    return False

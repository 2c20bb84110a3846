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

from dataclasses import dataclass, field

from processors.graph.bindings import Bindings
from processors.graph.lookup import Key

Question = tuple[str, str | None, str, str | None]
"""("ref", qualifier, name, scope) of a reference; ("type", None, written, scope) of a
base class or interface as a declaration writes it."""


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


@dataclass(slots=True)
class FileAnswers:
    binds: Bindings  # the bindings of the file's imports, as the answers saw them
    base: frozenset[Key]  # the lookup keys computing the bindings asked
    answers: dict[Question, Answer] = field(default_factory=dict)


def changed_names(old: Bindings, new: Bindings) -> frozenset[str]:
    """The local names bound differently ('*' when the wildcard imports differ)."""
    changed = {
        name
        for name in old.names.keys() | new.names.keys()
        if old.names.get(name) != new.names.get(name)
    }
    if old.wildcards != new.wildcards:
        changed.add("*")
    return frozenset(changed)

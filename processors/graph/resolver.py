"""Resolving a file's references to symbols, through its imports and scopes first.

Order for a bare name: the enclosing scopes of the file, then the file's import
bindings, then the file's own package (Go folder, Java package), then wildcard
imports, and only then a repository-wide name match (at most NAME_MATCH_LIMIT
definers; more is ambiguous and draws nothing). A qualified name goes through its head:
``self``/``this`` (the enclosing class and its bases), ``super`` (the bases only), an
import binding (submodules, then members), or a class of the file or package; a member of
a module-level instance (``router = Router()``) is looked up in its class. Every answer
carries its confidence: ``import``, ``same_file``, ``same_folder`` or ``name_match``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Set
from functools import cached_property

from processors.graph import modules as m
from processors.graph.answers import (
    Answer,
    FileAnswers,
    OwnRead,
    Question,
    Target,
    changed_names,
    reads_changed,
)
from processors.graph.bindings import (
    Binding,
    Bindings,
    BindingsCache,
    bind_imports,
    file_bindings,
)
from processors.graph.lookup import Key, Lookup, Sig
from stores.projections.ids import symbol_id
from stores.records import FileRecord, ReferenceRecord, SymbolRecord

SELF_NAMES = frozenset({"self", "this", "cls", "Self"})
SUPER = "super"  # Python's super(), Java's and JavaScript's super: the bases' members
TYPE_KINDS = frozenset({"CLASS", "STRUCT", "INTERFACE", "TRAIT", "ENUM", "TYPE"})
IMPLICIT_MEMBER_LANGUAGES = frozenset({"java"})  # a bare call may mean this.call()
MAX_DEPTH = 4
_PY_BUILTIN_TYPES = (list, dict, str, set, bytes, tuple, int, float, frozenset, object)
BUILTIN_NAMES: dict[str, frozenset[str]] = {
    "python": frozenset(dir(builtins)).union(*(dir(t) for t in _PY_BUILTIN_TYPES)),
    "javascript": frozenset(
        """push pop shift unshift map filter reduce forEach find findIndex some every
        includes indexOf join slice splice concat keys values entries then catch finally
        toString valueOf hasOwnProperty log error warn info debug apply call bind
        addEventListener removeEventListener querySelector getElementById resolve reject
        parse stringify assign freeze create has get set add delete clear replace split
        trim toLowerCase toUpperCase startsWith endsWith require""".split()
    ),
}
BUILTIN_NAMES["typescript"] = BUILTIN_NAMES["tsx"] = BUILTIN_NAMES["javascript"]
RANK = {"import": 0, "same_file": 1, "same_folder": 2, "name_match": 3}


class FileResolver:
    """Resolves the references of one file; every question goes through ``lookup``.

    ``previous``: the file's answers from its last resolution (its facts unchanged
    since), and ``dirty`` the keys whose answers changed since: answers that asked none
    of them (nor read a symbol of its own among ``reshaped``, when the file changed) are
    reused. ``answers`` holds this resolution's, for the next one.
    """

    def __init__(
        self,
        record: FileRecord,
        lookup: Lookup,
        cache: BindingsCache | None = None,
        previous: FileAnswers | None = None,
        dirty: Set[Key] = frozenset(),
        reshaped: Set[str] = frozenset(),
    ) -> None:
        self.record = record
        self.path = record.path
        self.language = record.language
        self.lookup = lookup
        if previous is not None and dirty.isdisjoint(previous.base):
            self.binds, base, parts = previous.binds, previous.base, previous.imports
            lookup.keys.update(base)
            redone: set[str] = set()  # the names that may be bound differently
        else:  # ``previous`` is of the same imports (IncrementalGraph.change)
            self.binds, parts, redone = bind_imports(
                self.path,
                self.language,
                record.imports,
                lookup,
                previous.imports if previous is not None else (),
                dirty,
            )
            base = frozenset(lookup.keys)
        self._cache: BindingsCache = cache if cache is not None else {}
        self.answers = FileAnswers(self.binds, base, imports=parts)
        self._reusable = previous.answers if previous is not None else {}
        self._rebound = (
            changed_names(previous.binds, self.binds, redone if previous.imports else None)
            if previous is not None
            else frozenset()
        )
        self._dirty = dirty
        self._names: set[str] = set()  # the bindings read by the question being answered
        self._own: set[OwnRead] = set()  # what it read of the file's own symbols
        self._reshaped = reshaped

    @cached_property
    def own(self) -> dict[str, SymbolRecord]:
        """The file's symbols by qualname, the first definition winning (built when first
        read: a patched dependent mostly reads none)."""
        return {s.qualname: s for s in reversed(self.record.symbols)}

    def _answer(
        self, question: Question, compute: Callable[[], list[Target]]
    ) -> tuple[Target, ...]:
        """The question's targets: answered already in this pass, reused from the last
        one, or computed with the keys it asks recorded apart; either way its keys are
        added to the enclosing recording (the file's, or an outer question's)."""
        answer = self.answers.answers.get(question)
        if answer is None:
            answer = self._reusable.get(question)
            if answer is None or not self._valid(answer):
                outer = self.lookup.keys, self._names, self._own
                self.lookup.keys, self._names, self._own = set(), set(), set()
                try:
                    targets = tuple(compute())
                    answer = Answer(
                        targets, tuple(self.lookup.keys), tuple(self._names), tuple(self._own)
                    )
                finally:
                    self.lookup.keys, self._names, self._own = outer
            self.answers.answers[question] = answer
        self.lookup.keys.update(answer.keys)
        self._names.update(answer.names)
        self._own.update(answer.own)
        return answer.targets

    def _valid(self, answer: Answer) -> bool:
        return (
            self._dirty.isdisjoint(answer.keys)
            and self._rebound.isdisjoint(answer.names)
            and not (self._reshaped and reads_changed(answer.own, self._reshaped))
        )

    def _bound(self, name: str) -> Binding | None:
        """What an import of this file binds ``name`` to (recorded: see answers.py)."""
        self._names.add(name)
        return self.binds.names.get(name)

    def revalidate(self) -> list[Question]:
        """Carry the previous answers still valid into this resolution, none asked yet
        (a dependent whose facts did not change: see tally.py); return the stale ones,
        which re-resolve when asked (and are dropped unless asked)."""
        reusable, disjoint, rebound = self._reusable, self._dirty.isdisjoint, self._rebound
        if self._reshaped:
            kept = {q: a for q, a in reusable.items() if self._valid(a)}
        elif rebound:
            unbound = rebound.isdisjoint
            kept = {q: a for q, a in reusable.items() if disjoint(a.keys) and unbound(a.names)}
        else:
            kept = {q: a for q, a in reusable.items() if disjoint(a.keys)}
        self.answers.answers, self._reusable = kept, {}
        return [q for q in reusable if q not in kept] if len(kept) < len(reusable) else []

    # -- entry points ---------------------------------------------------------------

    def ask(self, question: Question) -> tuple[Target, ...]:
        """A question of ``uses_of`` (tally.py): a reference or a declared base."""
        kind, qualifier, name, scope = question  # kept as the answer's key (memory)
        if kind == "ref":
            return self._answer(question, lambda: self._resolve(qualifier, name, scope))
        return self._answer(question, lambda: self._resolve_type_name(name, scope))

    def resolve(self, ref: ReferenceRecord) -> list[Target]:
        return self.resolve_name(ref.qualifier, ref.name, ref.scope)

    def resolve_name(self, qualifier: str | None, name: str, scope: str | None) -> list[Target]:
        """A reference to ``name`` reached through ``qualifier`` (as written) in ``scope``."""
        return list(
            self._answer(
                ("ref", qualifier, name, scope), lambda: self._resolve(qualifier, name, scope)
            )
        )

    def _resolve(self, written: str | None, name: str, scope: str | None) -> list[Target]:
        qualifier = written.replace("::", ".") if written else None
        if qualifier is None:
            return self._bare(name, scope)
        if qualifier == "<expr>":
            return self._name_match(name, member=True)
        parts = qualifier.split(".")
        found = self._qualified(parts, name, scope)
        return found if found is not None else self._name_match(name, member=True)

    def resolve_type_name(self, written: str, scope: str | None) -> list[Target]:
        """A base class or interface as written in a declaration: 'Base', 'a.b.Base'."""
        return list(
            self._answer(
                ("type", None, written, scope), lambda: self._resolve_type_name(written, scope)
            )
        )

    def _resolve_type_name(self, written: str, scope: str | None, depth: int = 0) -> list[Target]:
        parts = written.replace("::", ".").split("<", 1)[0].split("[", 1)[0].split(".")
        if len(parts) == 1:
            return self._bare(parts[0], scope)
        found = self._qualified(parts[:-1], parts[-1], scope, depth)
        return found if found is not None else self._name_match(parts[-1], member=False)

    # -- bare names -----------------------------------------------------------------

    def _bare(self, name: str, scope: str | None) -> list[Target]:
        local = self._in_scopes(name, scope)
        if local is not None:
            return [local]
        binding = self._bound(name)
        if binding is not None:
            found = self._through(binding, [], name, depth=0, bound=True)
            return [found] if found is not None else []
        self._names.add("*")
        for found in (self._in_package(name), self._in_wildcards(self.binds, name, 0)):
            if found is not None:
                return [found]
        return self._name_match(name, member=False)

    def _in_scopes(self, name: str, scope: str | None) -> Target | None:
        self._own.add((name, scope))
        chain = _scope_chain(scope)
        for holder in chain:
            sym = self.own.get(holder)
            if (
                sym is not None
                and sym.kind in TYPE_KINDS
                and (self.language not in IMPLICIT_MEMBER_LANGUAGES)
            ):
                continue  # Python, JS, Rust: a class body is not a scope for its methods
            hit = self.own.get(f"{holder}.{name}")
            if hit is not None:
                return Target(symbol_id(self.path, hit.qualname), self.path, "same_file")
        hit = self.own.get(name)
        if hit is not None:
            return Target(symbol_id(self.path, hit.qualname), self.path, "same_file")
        return None

    def _in_package(self, name: str) -> Target | None:
        if self.language == "go":
            files = m.go_package_files(self.path, self.lookup)
        elif self.language == "java" and self.record.package:
            files = tuple(f for f in self.lookup.package(self.record.package) if f != self.path)
        else:
            return None
        for path in files:
            if self.lookup.symbol(path, name) is not None:
                return Target(symbol_id(path, name), path, "same_folder")
        return None

    def _in_wildcards(self, binds: Bindings, name: str, depth: int) -> Target | None:
        for module in binds.wildcards:
            found = self._member(module, name, depth + 1)
            if found is not None:
                return found
        return None

    def _name_match(self, name: str, *, member: bool) -> list[Target]:
        """Definitions found by name alone, marked ``name_match``: methods for a name
        reached through an unknown receiver, anything else for a bare name; never a
        name the language itself provides (``super``, ``append``, ``push``)."""
        if name in BUILTIN_NAMES.get(self.language or "", ()):
            return []
        definers = self.lookup.definers(f"{'member' if member else 'top'}:{name}")
        if not definers:
            return []
        return [
            Target(symbol_id(path, qualname), path, "name_match")
            for path, qualname in definers
            if path != self.path
        ]

    # -- qualified names ------------------------------------------------------------

    def _qualified(
        self, parts: list[str], name: str, scope: str | None, depth: int = 0
    ) -> list[Target] | None:
        """``depth``: how many module-level values (``x = Cls()``) led here; each one
        followed counts, so ``x = x.f()`` or two modules' values naming each other end."""
        head, rest = parts[0], parts[1:]
        if head == SUPER and self.language != "rust":  # Rust's super:: is a module path
            return self._super([*rest, name], scope)
        if head in SELF_NAMES:
            owner = self._enclosing_type(scope)
            if owner is None:
                return None
            found = self._member_of_type(self.path, owner, [*rest, name], 0)
            return [found] if found is not None else None
        binding = self._bound(head)
        if binding is not None:
            found = self._through(binding, rest, name, depth=depth, bound=False)
            return [found] if found is not None else []
        local = self._in_scopes(head, scope) or self._in_package(head)
        if local is not None:
            qual = local.node.rsplit(":", 1)[1]
            found = self._member_of_type(local.path, qual, [*rest, name], depth)
            return [found] if found is not None else None
        return None

    def _super(self, parts: list[str], scope: str | None) -> list[Target] | None:
        """``super.parts`` in the enclosing class: its bases' member, never its own (an
        override calling the method it overrides is no recursion). None when no base has
        it, as in a mixin: a name match then."""
        owner = self._enclosing_type(scope)
        sig = self.lookup.symbol(self.path, owner) if owner is not None else None
        if sig is None:
            return None
        found = self._member_of_bases(self.path, sig, sig.bases, parts, 0)
        return [found] if found is not None else None

    def _through(
        self, binding: Binding, rest: list[str], name: str, depth: int, bound: bool
    ) -> Target | None:
        """``binding.rest.name`` (or the bound member itself when ``bound``)."""
        module, member, stems = binding.module, binding.member, binding.stems
        python = self.language == "python" and bool(stems)
        if not module.internal and not python:
            return None
        path = [] if member is None else member.split(".")
        for part in rest:
            if not path and python:
                deeper = tuple(f"{s}/{part}" if s else part for s in stems)
                sub = m.python_submodule(stems, part, self.lookup, self.path)
                if sub.internal:
                    module, stems = sub, deeper
                    continue
                if any(self.lookup.folder(d) for d in deeper):  # a namespace package
                    module, stems = m.NOWHERE, deeper
                    continue
            if not path and module.key is not None and self.language == "rust":
                sub = m.rust_child(module.key, [part], self.lookup)
                if sub.internal:
                    module = sub
                    continue
            path.append(part)
        if not bound:
            path.append(name)
        if not path:
            return None
        return self._member(module, ".".join(path), depth)

    def _member(self, module: m.Module, qualname: str, depth: int) -> Target | None:
        """``qualname`` in one of the module's files, following re-exports and bases."""
        if depth > MAX_DEPTH:
            return None
        head, _, tail = qualname.partition(".")
        for path in module.files:
            sig = self.lookup.symbol(path, qualname)
            if sig is not None:
                return Target(symbol_id(path, qualname), path, "import")
            if tail and self.lookup.symbol(path, head) is not None:
                found = self._member_of_type(path, head, tail.split("."), depth + 1)
                if found is not None:
                    return found
        for path in module.files:  # a package's __init__ or an index.ts re-exporting it
            found = self._reexported(path, head, tail, depth + 1)
            if found is not None:
                return found
        return None

    def _reexported(self, path: str, name: str, tail: str, depth: int) -> Target | None:
        binding = self._bound_in(path, name)
        if binding is not None:
            found = self._through(binding, tail.split(".") if tail else [], "", depth, bound=True)
            if found is not None:
                return found
        qualname = f"{name}.{tail}" if tail else name
        for module in self._wildcards_in(path):
            found = self._member(module, qualname, depth + 1)
            if found is not None:
                return found
        return None

    def _bound_in(self, path: str, name: str) -> Binding | None:
        """What another file's imports bind ``name`` to: asked as ("b", "path#name"),
        which IncrementalGraph makes dirty when that binding changes."""
        self.lookup.bound_in(path, name)
        return self._bindings_of(path).names.get(name)

    def _wildcards_in(self, path: str) -> list[m.Module]:
        self.lookup.bound_in(path, "*")
        return self._bindings_of(path).wildcards

    def _bindings_of(self, path: str) -> Bindings:
        """Another file's bindings (for re-exports and inherited members), computed once
        per resolution pass and shared by every file that needs them."""
        cached = self._cache.get(path)
        if cached is None:
            cached = self._cache[path] = file_bindings(path, self.lookup)[0]
        return cached.binds

    # -- types and their members ----------------------------------------------------

    def _enclosing_type(self, scope: str | None) -> str | None:
        self._own.add((None, scope))
        for holder in _scope_chain(scope):
            sym = self.own.get(holder)
            if sym is not None and sym.kind in TYPE_KINDS:
                return holder
            if sym is not None and sym.kind == "METHOD" and sym.parent:
                return sym.parent  # Go and Rust methods name their type as parent
        return None

    def _member_of_type(self, path: str, owner: str, parts: list[str], depth: int) -> Target | None:
        """``owner.parts`` in ``path``, else in the owner's bases (resolved from there)."""
        if depth > MAX_DEPTH:
            return None
        qualname = ".".join([owner, *parts])
        if self.lookup.symbol(path, qualname) is not None:
            return Target(
                symbol_id(path, qualname), path, "same_file" if path == self.path else "import"
            )
        if path == self.path or self.language in ("go", "rust"):
            found = self._method_elsewhere_in_package(owner, parts)
            if found is not None:
                return found
        sig = self.lookup.symbol(path, owner)
        if sig is None:
            return None
        if sig.value_type is not None:
            return self._member_of_value(path, sig.value_type, parts, depth)
        return self._member_of_bases(path, sig, (*sig.bases, *sig.implements), parts, depth)

    def _member_of_bases(
        self, path: str, sig: Sig, bases: tuple[str, ...], parts: list[str], depth: int
    ) -> Target | None:
        """``parts`` in the first of ``bases`` (as written in ``path``) that has them."""
        for base in bases:
            for target in self._types_in(path, base, sig.parent):
                base_qual = target.node.rsplit(":", 1)[1]
                found = self._member_of_type(target.path, base_qual, parts, depth + 1)
                if found is not None:
                    return Target(
                        found.node, found.path, _weaker(found.confidence, target.confidence)
                    )
        return None

    def _member_of_value(
        self, path: str, value_type: str, parts: list[str], depth: int
    ) -> Target | None:
        """``parts`` of a module-level ``x = value_type(...)``: in the class, when
        ``value_type`` names one (a function's result has no known type)."""
        if depth > MAX_DEPTH:
            return None
        for target in self._types_in(path, value_type, None, depth + 1):
            qual = target.node.rsplit(":", 1)[1]
            sig = self.lookup.symbol(target.path, qual)
            if sig is None or sig.kind not in TYPE_KINDS:
                continue
            found = self._member_of_type(target.path, qual, parts, depth + 1)
            if found is not None:
                return Target(found.node, found.path, _weaker(found.confidence, target.confidence))
        return None

    def _types_in(self, path: str, written: str, scope: str | None, depth: int = 0) -> list[Target]:
        """A type name as written in ``path`` (at ``scope``), name matches left out.
        Past a module-level value (``depth`` > 0) the answer is not kept: it depends on
        how deep it was asked, and a kept answer must not."""
        if path != self.path:
            targets = self._resolve_in(path, written, depth)
        elif depth == 0:
            targets = self.resolve_type_name(written, scope)
        else:
            targets = self._resolve_type_name(written, scope, depth)
        return [t for t in targets if t.confidence != "name_match"]

    def _method_elsewhere_in_package(self, owner: str, parts: list[str]) -> Target | None:
        """Go and Rust declare methods apart from their type, often in another file."""
        if self.language != "go":
            return None
        qualname = ".".join([owner, *parts])
        for path in m.go_package_files(self.path, self.lookup):
            if self.lookup.symbol(path, qualname) is not None:
                return Target(symbol_id(path, qualname), path, "same_folder")
        return None

    def _resolve_in(self, path: str, written: str, depth: int = 0) -> list[Target]:
        """A type name written in another file, resolved through that file's imports."""
        parts = written.replace("::", ".").split("<", 1)[0].split(".")
        binding = self._bound_in(path, parts[0])
        if binding is not None:
            found = self._through(
                binding,
                parts[1:-1] if len(parts) > 1 else [],
                parts[-1],
                max(depth, 1),
                len(parts) == 1,
            )
            return [found] if found is not None else []
        if self.lookup.symbol(path, parts[-1]) is not None and len(parts) == 1:
            return [Target(symbol_id(path, parts[-1]), path, "same_file")]
        return []


def _scope_chain(scope: str | None) -> list[str]:
    """'A.B.c' -> ['A.B.c', 'A.B', 'A'] (innermost first)."""
    if not scope:
        return []
    parts = scope.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


def _weaker(a: str, b: str) -> str:
    return a if RANK[a] >= RANK[b] else b


__all__ = ["FileResolver", "Sig", "Target"]

"""Repositories, their files and symbols, health and dead letters: the catalogue answers."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from typing import Any, Literal

from producers.topics import partition_key
from query.read_model import RepoView
from query.schemas import (
    DeadLetterOut,
    DeadLetterPage,
    FileDetail,
    FilePage,
    FileSummary,
    Health,
    ImportOut,
    Producer,
    Repository,
    RepositoryList,
    SymbolPage,
)
from query.service.access import reader
from query.service.base import ServiceBase, at_one_instant, root_name
from query.service.errors import NotFound
from stores.freshness import Freshness
from stores.records import FileRecord

MAX_FENCED = 20  # older leases listed per repository
GLOB_CHARS = frozenset("*?[")
FreshnessStatus = Literal["fresh", "stale", "updating"]
RepositoryOrder = Literal[
    "repo", "-repo", "name", "-name", "files", "-files", "indexed_at", "-indexed_at"
]
LANGUAGES_SHOWN = 5  # a repository's languages listed, most files first


def repository_key(order: str) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """The sort key of a listed repository (its JSON) for ``order``: a field, ``-`` for
    descending; ties, and a missing value (a name not yet known, never indexed), by
    id. The router sorts the shards' pages with the same key."""
    field = order.lstrip("-")
    descending = order.startswith("-")

    def key(item: Mapping[str, Any]) -> tuple[Any, ...]:
        value = item["freshness"].get("indexed_at") if field == "indexed_at" else item[field]
        if value is None:
            return (1, 0, item["repo"])
        if isinstance(value, str):
            value = value.lower()
            return (
                (0, value, item["repo"]) if not descending else (0, _inverted(value), item["repo"])
            )
        return (0, -value if descending else value, item["repo"])

    return key


def _inverted(text: str) -> tuple[int, ...]:
    """A string's descending order as an ascending key."""
    return (*(-ord(c) for c in text), 1)


def letter_repo(key: bytes) -> str:
    """The repository of a dead letter's original key (a status key's first part)."""
    return partition_key(key).decode(errors="replace")


def name_matches(pattern: str, repo: str, view: RepoView) -> bool:
    """``pattern`` (a substring, or a glob when it holds * ? [) against the id and
    the root directory name, case-insensitively."""
    names = [repo.lower()]
    if view.status is not None:
        names.append(root_name(view.status.root).lower())
    pattern = pattern.lower()
    if GLOB_CHARS.intersection(pattern):
        return any(fnmatch.fnmatchcase(n, pattern) for n in names)
    return any(pattern in n for n in names)


def file_record(view: RepoView, path: str) -> FileRecord:
    record = view.state.files.get(path.strip("/"))
    if record is None:
        raise NotFound(f"no file {path!r} in repository {view.state.repo!r}")
    return record


class RepositoryAnswers(ServiceBase):
    def health(self) -> Health:
        """Whether the service is up and its read side has caught up with the topics."""
        model = self.model
        held, everything = self.held(), reader().reads_all
        # A token that reads some repositories is told of theirs only (issue 19): the
        # deployment's counts would tell of the others.
        return Health(
            status="ok",
            ready=self._ready(),
            repositories=len(held),
            deltas_applied=model.deltas_applied
            if everything
            else sum(v.state.seq for v in held.values()),
            dead_letters=model.dead_letters_total if everything else 0,
            partitions=model.serves,
        )

    @at_one_instant
    def repositories(
        self,
        name: str | None = None,
        status: FreshnessStatus | None = None,
        offset: int = 0,
        limit: int = 100,
        language: str | None = None,
        sort: RepositoryOrder = "repo",
    ) -> RepositoryList:
        """The indexed repositories, filtered by name, freshness and language (any of
        its files), in ``sort`` order (by id by default), paged."""
        repos = self.held()
        matched = [
            r
            for r in sorted(repos)
            if (name is None or name_matches(name, r, repos[r]))
            and (status is None or self.model.freshness(r).status == status)
            and (language is None or language.lower() in self._languages(repos[r]))
        ]
        if sort == "repo":
            chosen = matched[offset : offset + limit]
            page = [self._repository(repos[r]) for r in chosen]
        else:  # every match listed to be sorted: the counts are the state's, kept per version
            listed = [self._repository(repos[r]) for r in matched]
            key = repository_key(sort)
            page = sorted(listed, key=lambda r: key(r.model_dump()))[offset : offset + limit]
        return RepositoryList(
            total=len(matched), offset=offset, limit=limit, items=page, partial=self.warming()
        )

    def _languages(self, view: RepoView) -> dict[str, int]:
        """Files per language (lowercase), most first, per state version."""

        def count() -> dict[str, int]:
            found: dict[str, int] = {}
            for record in view.state.files.values():
                if record.language:
                    lang = record.language.lower()
                    found[lang] = found.get(lang, 0) + 1
            return dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))

        return self._cache.get(view, "languages", count)

    def repository(self, repo: str) -> Repository:
        return self._repository(self.view(repo))

    def freshness(self, repo: str) -> Freshness:
        return self.model.freshness(self.view(repo).state.repo)

    def _repository(self, view: RepoView) -> Repository:
        state = view.state
        return Repository(
            repo=state.repo,
            name=root_name(view.status.root) if view.status else None,
            branch=state.branch or (view.status.branch if view.status else None),
            files=len(state.files),
            languages=dict(list(self._languages(view).items())[:LANGUAGES_SHOWN]),
            symbols=sum(len(r.symbols) for r in state.files.values()),
            edges=len(state.edges),
            dead_letters=view.dead_letters,
            delta_seq=state.seq,
            owner=(
                Producer(producer=owner.producer, epoch=owner.epoch, host=owner.host)
                if (owner := view.owner) is not None
                else None
            ),
            fenced=[Producer(producer=p, epoch=e) for e, p in view.fenced_producers[:MAX_FENCED]],
            freshness=self.model.freshness(state.repo),
        )

    def files(
        self,
        repo: str,
        language: str | None = None,
        prefix: str | None = None,
        glob: str | None = None,
        skipped: bool | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> FilePage:
        """A repository's files by path, filtered and paged, with the true total."""
        view = self.view(repo)
        matched = [
            r
            for _, r in sorted(view.state.files.items())
            if (language is None or r.language == language)
            and (prefix is None or r.path.startswith(prefix))
            and (glob is None or fnmatch.fnmatchcase(r.path, glob))
            and (skipped is None or (r.skipped is not None) == skipped)
        ]
        return FilePage(
            repo=repo,
            total=len(matched),
            offset=offset,
            limit=limit,
            items=[
                FileSummary(
                    path=r.path,
                    language=r.language,
                    size=r.size,
                    lines=r.lines,
                    symbols=len(r.symbols),
                    imports=len(r.imports),
                    skipped=r.skipped,
                    parse_errors=r.parse_errors,
                )
                for r in matched[offset : offset + limit]
            ],
            freshness=self.model.freshness(repo),
        )

    def file_detail(self, repo: str, path: str, limit: int = 200) -> FileDetail:
        """One file: symbols, imports, what it depends on and is used by (each list at
        most ``limit`` long, beside its total)."""
        view = self.view(repo)
        record = file_record(view, path)
        depends_on = sorted(
            e.dst.split(":", 1)[1]
            for e in view.state.owned_edges(record.path)
            if e.kind == "IMPORTS"
        )
        imported_by = self._adjacency(view).importing_paths(record.path)
        return FileDetail(
            repo=repo,
            path=record.path,
            language=record.language,
            size=record.size,
            lines=record.lines,
            content_hash=record.content_hash,
            skipped=record.skipped,
            parse_errors=record.parse_errors,
            problems=list(record.problems),
            origin=record.origin,
            commit=record.commit,
            working_tree=record.working_tree,
            package=record.package,
            purpose=record.purpose,
            sections=[f"L{s.line_start}-{s.line_end}: {s.label}" for s in record.sections],
            keywords=[k.term for k in record.keywords],
            references=view.references.get(record.path, len(record.references)),
            symbols=list(record.symbols[:limit]),
            symbols_total=len(record.symbols),
            imports=[
                ImportOut(module=i.module, names=list(i.names), level=i.level, line=i.line)
                for i in record.imports[:limit]
            ],
            imports_total=len(record.imports),
            depends_on=depends_on[:limit],
            depends_on_total=len(depends_on),
            imported_by=imported_by[:limit],
            imported_by_total=len(imported_by),
            freshness=self.model.freshness(repo),
        )

    def symbols(
        self, repo: str, path: str, kind: str | None = None, offset: int = 0, limit: int = 200
    ) -> SymbolPage:
        """The symbols a file defines, in source order, optionally of one kind, paged."""
        view = self.view(repo)
        record = file_record(view, path)
        items = [s for s in record.symbols if kind is None or s.kind == kind.upper()]
        return SymbolPage(
            repo=repo,
            path=record.path,
            total=len(items),
            offset=offset,
            limit=limit,
            items=items[offset : offset + limit],
            freshness=self.model.freshness(repo),
        )

    def dead_letters(self, limit: int = 20) -> DeadLetterPage:
        """The most recent events that could not be processed, newest first."""
        letters = list(self.model.dead_letters)
        total = self.model.dead_letters_total
        if not reader().reads_all:
            # Only the letters of the repositories it may read, and their count among
            # the recent ones held: the deployment's total would tell of the others.
            letters = [d for d in letters if d.key and self.readable(letter_repo(d.key))]
            total = len(letters)
        recent = letters[-limit:][::-1]
        return DeadLetterPage(
            total=total,
            items=[
                DeadLetterOut(
                    failure=d.failure,
                    reason=d.reason,
                    topic=d.topic,
                    partition=d.partition,
                    offset=d.offset,
                    key=d.key.decode(errors="replace") if d.key else None,
                    failed_at=d.failed_at,
                )
                for d in recent
            ],
        )

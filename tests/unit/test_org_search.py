"""Files ranked across repositories: the merged ranking of three repositories, each ranked
with the corpus's statistics, is the ranking of one index holding all their files."""

from __future__ import annotations

import pytest

from processors.indexer import RepoIndex
from query.org_search import Corpus, Member, corpus_of, rank_across, top_of
from query.retrieval import RepoRetrieval
from query.search.ranking import RankWeights
from tests.factories import Stamp

REPOS = {
    "billing": {
        "billing/limits.py": (
            "class RateLimiter:\n    def allow(self, key):\n"
            '        """Token bucket: is one more request allowed for key?"""\n'
            "        return self.bucket(key).take()\n"
        ),
        "billing/invoice.py": "def total(lines):\n    return sum(line.amount for line in lines)\n",
    },
    "gateway": {
        "gateway/throttle.py": (
            "def throttle(request, limiter):\n"
            '    """Reject the request when the rate limit is reached."""\n'
            "    if not limiter.allow(request.client):\n        raise TooManyRequests()\n"
        ),
        "gateway/routes.py": "def route(request):\n    return handlers[request.path](request)\n",
        "gateway/errors.py": "class TooManyRequests(Exception):\n    status = 429\n",
        # A name two repositories define: its rarity is the corpus's (1/2), not 1 in each.
        "gateway/limiter.py": (
            "class RateLimiter:\n    def allow(self, client):\n        return True\n"
        ),
    },
    "docs": {
        "docs/guide.md": "# Rate limiting\n\nEvery request is counted against a rate limit.\n",
    },
}
QUESTIONS = [
    "where is rate limiting done",
    "TooManyRequests raised when the limit is reached",
    "RateLimiter.allow token bucket",
    "which RateLimiter do we use",
    "sum of invoice lines",
    "request routes handlers",
]


def retrieval(files: dict[str, str], repo: str) -> RepoRetrieval:
    index, stamp, found = RepoIndex(repo), Stamp(repo=repo), RepoRetrieval(repo)
    found.apply(stamp.claimed(index))
    for path, text in files.items():
        delta = index.handle(stamp.changed(path, text), now=1.0)
        assert delta is not None
        found.apply(delta)
    return found


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_merged_ranking_is_one_index_ranking(question: str) -> None:
    members = [Member(repo, retrieval(files, repo)) for repo, files in REPOS.items()]
    whole = retrieval({p: t for files in REPOS.values() for p, t in files.items()}, "all")
    weights = RankWeights(structural=0.0)  # importance is each repository's own
    merged, total = rank_across(question, members, weights=weights, limit=10)
    single = whole.search(question, limit=10, weights=weights)
    assert single, "the question matches nothing: the test would prove nothing"
    assert [(h.file.path, h.file.score, h.file.signals) for h in merged] == [
        (f.path, f.score, f.signals) for f in single
    ]
    owner = {p: repo for repo, files in REPOS.items() for p in files}
    assert all(owner[h.file.path] == h.repo for h in merged)
    assert total >= len(merged)


@pytest.mark.parametrize("question", QUESTIONS)
def test_shards_ranked_in_three_passes_merge_into_the_one_index_ranking(question: str) -> None:
    members = [Member(repo, retrieval(files, repo)) for repo, files in REPOS.items()]
    shards = [members[:1], members[1:]]  # billing | gateway, docs
    weights = RankWeights(structural=0.0)
    corpus = Corpus.merged([corpus_of(question, shard) for shard in shards])
    corpus = Corpus(corpus.stats, corpus.names, max(top_of(question, s, corpus) for s in shards))
    parts = [rank_across(question, s, weights=weights, corpus=corpus)[0] for s in shards]
    merged = sorted(
        (h for part in parts for h in part),
        key=lambda h: (-round(h.file.score, 9), h.repo, h.file.path),
    )[:10]
    whole, _ = rank_across(question, members, weights=weights)
    assert [(h.repo, h.file) for h in merged] == [(h.repo, h.file) for h in whole]


def test_each_repository_alone_scores_its_best_file_one_and_the_merge_does_not() -> None:
    question = "where is rate limiting done"
    members = [Member(repo, retrieval(files, repo)) for repo, files in REPOS.items()]
    alone = {m.repo: m.retrieval.search(question, limit=1)[0] for m in members}
    assert {repo: f.signals["text"] for repo, f in alone.items()} == {
        "billing": 1.0,
        "gateway": 1.0,
        "docs": 1.0,
    }
    merged, _ = rank_across(question, members, limit=10)
    texts = [h.file.signals.get("text", 0.0) for h in merged]
    assert max(texts) == 1.0 and sum(t == 1.0 for t in texts) == 1
    assert merged[0].repo in {"gateway", "docs"}
    assert rank_across(question, [], limit=5) == ([], 0)


def test_search_without_a_repository_answers_over_http_with_each_hits_repository() -> None:
    from fastapi.testclient import TestClient

    from query.api import create_api
    from query.read_model import ReadModel

    model = ReadModel(clock=lambda: 1002.0)
    for repo, files in REPOS.items():
        index, stamp = RepoIndex(repo), Stamp(repo=repo)
        events = [stamp.changed(p, t, origin="scan") for p, t in files.items()]
        for event in [stamp.claim(), *events, stamp.scan_completed("c1")]:
            delta = index.handle(event, now=1000.0)
            assert delta is not None
            model.apply_delta(delta)
    client = TestClient(create_api(model, ready=lambda: True))
    page = client.get("/search", params={"q": "TooManyRequests raised", "limit": 3}).json()
    assert (page["repositories"], page["partitions"], page["partial"]) == (3, "all", False)
    first = page["items"][0]
    assert (first["repo"], first["path"]) == ("gateway", "gateway/errors.py")
    assert first["freshness"]["indexed_commit"] == "c1" and first["read"].startswith("L")
    assert all(item["repo"] == item["path"].split("/")[0] for item in page["items"])
    only = client.get("/search", params={"q": "rate limit", "repos": "docs,bill*"}).json()
    assert only["repositories"] == 2
    assert {item["repo"] for item in only["items"]} <= {"docs", "billing"} and only["items"]
    none = client.get("/search", params={"q": "rate limit", "repos": "nothing-*"}).json()
    assert (none["repositories"], none["items"]) == (0, [])
    assert client.get("/search", params={"q": ""}).status_code == 422

"""Ranking files for a question: BM25 re-ranked by the files and names it mentions."""

from __future__ import annotations

import pytest

from processors.indexer import RepoIndex
from query.retrieval import RepoRetrieval
from query.search.ranking import (
    OFF_PYTHON,
    Proximity,
    RankWeights,
    is_python_path,
    is_source,
    mentions,
    module_path,
)
from tests.factories import Stamp

FILES = {
    "app/sessions.py": (
        '"""HTTP sessions."""\nclass Session:\n    def resolve_redirects(self, resp):\n'
        '        """Follow redirects of a response."""\n        return resp\n'
    ),
    "app/models.py": (
        "class Response:\n    def iter_content(self, chunk_size):\n"
        '        """Iterate over the response body in chunks."""\n        return chunk_size\n'
    ),
    "app/utils.py": "def redirect_location(headers):\n    return headers.get('location')\n",
    "docs/redirects.md": "# Redirects\n\nRedirects are followed by the session.\n",
}


def retrieval() -> RepoRetrieval:
    index, stamp, found = RepoIndex("app-1"), Stamp(), RepoRetrieval()
    found.apply(stamp.claimed(index))
    for path, text in FILES.items():
        delta = index.handle(stamp.changed(path, text), now=1.0)
        assert delta is not None
        found.apply(delta)
    return found


def test_mentions_split_dotted_names_and_keep_words() -> None:
    said = mentions("Session.resolve_redirects fails in app.sessions; see utils")
    assert {"Session.resolve_redirects", "Session", "resolve_redirects"} <= said.identifiers
    assert "app.sessions" in said.identifiers and "utils" in said.words
    assert module_path("app/__init__.py") == "app" and module_path("a/b.py") == "a.b"
    assert module_path("web/x.js") is None


def test_bm25_alone_ranks_by_words_and_names_lift_the_file_that_defines_them() -> None:
    found = retrieval()
    plain = found.search("the response body chunks", limit=2)
    assert [r.path for r in plain] == ["app/models.py", "app/sessions.py"]
    assert set(plain[0].signals) == {"text", "bm25", "source"} and plain[0].best_chunk == (
        "app/models.py#Response.iter_content"
    )

    named = found.search("redirects loop forever in resolve_redirects", limit=3)
    assert named[0].path == "app/sessions.py"
    assert named[0].signals["symbol"] == 1.0  # one file defines it


def test_a_quoted_path_or_module_is_a_candidate_even_without_words_in_common() -> None:
    found = retrieval()
    by_path = found.search("crash in app/utils.py", limit=1)[0]
    assert (by_path.path, by_path.signals["path"]) == ("app/utils.py", 1.0)
    by_module = found.search("importing app.models breaks", limit=1)[0]
    assert by_module.path == "app/models.py" and by_module.signals["path"] == 1.0
    assert found.search("zzz qqq", limit=5) == []


def test_source_code_is_nudged_above_prose() -> None:
    found = retrieval()
    ranked = {r.path: r for r in found.search("followed by the session", limit=4)}
    doc, code = ranked["docs/redirects.md"], ranked["app/sessions.py"]
    assert "source" not in doc.signals and doc.score == doc.signals["text"]
    assert code.signals["source"] == 1.0
    assert code.score == code.signals["text"] + RankWeights().source


def test_weights_are_tunable_and_a_prefix_filters() -> None:
    found = retrieval()
    question = "redirects of a response: resolve_redirects"
    weights = RankWeights(symbol=0.0, text=1.0, source=0.0)
    no_symbols = found.search(question, limit=1, weights=weights)
    assert no_symbols[0].score == no_symbols[0].signals["text"]
    assert [r.path for r in found.search(question, path_prefix="docs/")] == ["docs/redirects.md"]


def test_changes_replace_a_files_chunks_and_names_and_deletes_remove_them() -> None:
    found, index, stamp = RepoRetrieval(), RepoIndex("app-1"), Stamp()
    found.apply(stamp.claimed(index))
    for event in [
        stamp.changed("a.py", "def alpha_handler():\n    return 'alpha'\n"),
        stamp.changed("a.py", "def beta_handler():\n    return 'beta'\n"),
    ]:
        delta = index.handle(event, now=1.0)
        assert delta is not None
        found.apply(delta)
    assert found.definers == {"beta_handler": ("a.py",)}
    assert set(found.chunks) == {"a.py#beta_handler"}
    delta = index.handle(stamp.deleted("a.py"), now=1.0)
    assert delta is not None
    found.apply(delta)
    assert found.definers == {} and found.chunks == {} and len(found.sparse) == 0


def test_vendored_code_and_documents_are_not_source() -> None:
    assert is_source("src/app/models.py", "python")
    assert is_source("packages/ui/src/button.ts", "typescript")  # a monorepo's packages
    for path in (
        "src/app/packages/urllib3/response.py",
        "pip/_vendor/rich/text.py",
        "vendor/github.com/x/y.go",
        "web/node_modules/left-pad/index.js",
        "third_party/zlib/zlib.rs",
        "docs/conf.py",
    ):
        assert not is_source(path, "python"), path
    assert not is_source("README.md", None)


def test_the_innermost_own_frame_lifts_its_file() -> None:
    trace = (
        "Following redirects fails\n"
        'File "/site-packages/app/sessions.py", line 3, in resolve_redirects\n'
        'File "/site-packages/app/models.py", line 2, in iter_content\n'
        "ValueError: bad response\n"
    )
    ranked = retrieval().search(trace, limit=2)
    assert [r.path for r in ranked] == ["app/models.py", "app/sessions.py"]
    assert ranked[0].signals["frame"] == 1.0 and "frame" not in ranked[1].signals
    # without the frame's weight the words of the question put sessions.py first
    unweighted = retrieval().search(trace, limit=2, weights=RankWeights(frame=0.0))
    assert [r.path for r in unweighted] == ["app/sessions.py", "app/models.py"]


NEAR = Proximity(
    linked={"app/sessions.py": ["app/utils.py"], "app/utils.py": ["app/sessions.py"]}.get,  # type: ignore[arg-type]
    neighborhood={"app/sessions.py": "nb-1", "app/models.py": "nb-1", "app/utils.py": "nb-2"},
)


def test_files_near_a_named_file_get_the_imports_and_graph_signals() -> None:
    question = "redirect loop in resolve_redirects: the location header of a response"
    plain = retrieval().search(question, limit=3)
    assert all("imports" not in r.signals and "graph" not in r.signals for r in plain)
    near = {r.path: r for r in retrieval().search(question, limit=3, proximity=NEAR)}
    # sessions.py is named (it defines resolve_redirects, symbol 1.0): utils.py imports
    # from it, models.py shares its neighborhood; neither signal for the named file itself
    assert near["app/sessions.py"].signals["symbol"] == 1.0
    assert near["app/utils.py"].signals["imports"] == pytest.approx(1 / 3)
    assert near["app/models.py"].signals["graph"] == pytest.approx(1 / 3)
    assert "imports" not in near["app/sessions.py"].signals
    assert "graph" not in near["app/sessions.py"].signals
    # by default they weigh nothing; weighed, they lift the near files
    assert [r.path for r in plain] == [r.path for r in retrieval().search(question, limit=3)]
    lifted = retrieval().search(question, limit=3, proximity=NEAR, weights=RankWeights(imports=3.0))
    assert lifted[0].path == "app/utils.py"


def test_without_a_named_file_nothing_is_near() -> None:
    near = retrieval().search("the response body chunks", limit=3, proximity=NEAR)
    assert all("imports" not in r.signals and "graph" not in r.signals for r in near)


def test_by_default_files_not_in_python_take_the_off_python_weights() -> None:
    index, stamp, found = RepoIndex("mixed-1"), Stamp(), RepoRetrieval()
    found.apply(stamp.claimed(index))
    for path, text in {
        "svc/serve.go": "package svc\n\nfunc ServeThing() {}\n",
        "svc/serve.py": "def ServeThing():\n    pass\n",
    }.items():
        delta = index.handle(stamp.changed(path, text), now=1.0)
        assert delta is not None
        found.apply(delta)

    def weighed(signals: dict[str, float], weights: RankWeights) -> float:
        return sum(w * signals.get(name, 0.0) for name, w in weights.as_dict().items())

    by_default = {r.path: r for r in found.search("ServeThing is slow", limit=5)}
    go, py = by_default["svc/serve.go"], by_default["svc/serve.py"]
    assert go.signals["symbol"] == py.signals["symbol"] == 0.5  # two files define it
    assert go.score == pytest.approx(weighed(go.signals, OFF_PYTHON))
    assert py.score == pytest.approx(weighed(py.signals, RankWeights()))
    assert go.score != pytest.approx(weighed(go.signals, RankWeights()))
    # A profile weighs every file alike.
    given = {r.path: r for r in found.search("ServeThing is slow", limit=5, weights=RankWeights())}
    assert given["svc/serve.go"].score == pytest.approx(weighed(go.signals, RankWeights()))
    assert is_python_path("a/b.py") and is_python_path("a/b.pyi") and not is_python_path("a.go")

"""The ``literal`` signal (issue 17): message-like string literals of the code, cut at
placeholders, matched in order to the words of an issue; weighed by length and by how
few files hold them; kept current by the read model and given to the ranking."""

from __future__ import annotations

from processors.indexer import RepoIndex
from query.retrieval import RepoRetrieval
from query.search.literals import (
    LiteralIndex,
    error_lines,
    fragments,
    of_texts,
    piece_weight,
    quoted,
    words,
)
from tests.factories import Stamp

PYTHON = '''
def check(value, name):
    """A docstring is prose: it is not a literal here."""
    if not value:
        raise ValueError(f"Invalid header value {value!r} for name {name}")
    log.warning("retrying %s after %(delay)s seconds", name, {"delay": 3})
    return 'content_type'
'''
GO = 'return fmt.Errorf("cannot open %s: %v\\n", path, err)\n'
RUST = "panic!(\"called `Option::unwrap()` on a `None` value\");\nlet s = 'a';\n"
JS = "throw new Error(`failed to fetch ${url} after many retries`);\n"


def test_fragments_are_the_fixed_words_between_placeholders_in_every_language() -> None:
    # "for name" is too short, "retrying", "after", "seconds" one word each between
    # placeholders, 'content_type' no message (no space), the docstring prose
    assert fragments(PYTHON) == ["invalid header value"]
    assert fragments(GO) == ["cannot open"]
    assert fragments(RUST) == ["called option unwrap on a none value"]
    assert fragments(JS) == ["failed to fetch", "after many retries"]
    assert fragments('x = "one"; y = "a b"; z = "not found"') == []  # too short
    assert fragments('"' + " ".join(f"w{i}" for i in range(12)) + '"') == [
        "w0 w1 w2 w3 w4 w5 w6 w7"
    ]
    assert words("Cannot OPEN: /tmp/x.txt") == ["cannot", "open", "tmp", "x", "txt"]


def test_an_apostrophe_or_a_lifetime_opens_no_literal_but_a_string_prefix_does() -> None:
    rust = (
        "fn f<'a, M: Matcher>(x: &'a M) -> Sink<'a> {\n    // the sink doesn't own it, don't drop\n"
    )
    assert fragments(rust) == []
    assert fragments("raise ValueError(f'cannot read {x} from the file')") == [
        "cannot read",
        "from the file",
    ]
    assert fragments("x = rb'raw bytes of a header'") == ["raw bytes of a header"]
    assert fragments("# it's 'a quoted message' here") == ["a quoted message"]


def test_a_piece_weighs_by_its_length() -> None:
    assert [piece_weight(p) for p in ("ab cd", "ab cd ef", "ab cd ef gh", "a b c d e f")] == [
        1 / 3,
        2 / 3,
        1.0,
        1.0,
    ]


def test_the_question_must_hold_the_words_in_order_and_rare_pieces_weigh_more() -> None:
    index = of_texts(
        {
            "src/header.py": [PYTHON],
            "src/open.go": [GO],
            "src/other.go": ['errors.New("cannot open the file")', 'x("cannot open")'],
        }
    )
    question = (
        "ValueError: Invalid header value 'abc' for name Host\n"
        "and later: cannot open /tmp/x: permission denied; value header invalid"
    )
    assert index.pieces(question) == ["cannot open", "invalid header value"]
    assert index.matches(question) == {
        "src/header.py": 0.666667,  # 3 words, one file
        "src/open.go": 0.166667,  # 2 words, two files
        "src/other.go": 0.166667,
    }
    assert index.matches("value header invalid; open cannot") == {}


def test_putting_a_file_again_replaces_its_pieces_and_removing_forgets_them() -> None:
    index = LiteralIndex()
    index.put("a.go", ["cannot open", "bad magic number"])
    index.put("a.go", ["bad magic number"])
    assert index.matches("cannot open: bad magic number") == {"a.go": 0.666667}
    index.remove("a.go")
    assert len(index) == 0 and index.matches("bad magic number") == {}
    assert index._by_head == {} and index._holders == {}


def test_asked_the_read_model_keeps_the_literals_of_source_files_and_the_ranking_reads_them() -> (
    None
):
    found, index, stamp = RepoRetrieval(literals=True), RepoIndex("app-1"), Stamp()
    found.apply(stamp.claimed(index))
    for path, text in {
        "app/headers.py": PYTHON,
        "app/other.py": "def other_check(value):\n    return value\n",
        "docs/errors.md": "# Errors\n\n`invalid header value` is raised for a bad header.\n",
    }.items():
        delta = index.handle(stamp.changed(path, text), now=1.0)
        assert delta is not None
        found.apply(delta)
    ranked = {r.path: r for r in found.search("Invalid header value for a value", limit=5)}
    own = ranked["app/headers.py"].signals  # "invalid": an error line, quoted as such
    assert own["literal"] == own["literal_quoted"] == own["literal_error"] == 0.666667
    assert "literal" not in ranked["docs/errors.md"].signals  # documents are not source
    assert "literal" not in ranked["app/other.py"].signals
    delta = index.handle(stamp.deleted("app/headers.py"), now=1.0)
    assert delta is not None
    found.apply(delta)
    assert found.literals is not None
    assert found.literals.matches("invalid header value") == {}


def test_a_replica_keeps_no_literals_the_default_weights_do_not_use() -> None:
    found, index, stamp = RepoRetrieval(), RepoIndex("app-1"), Stamp()
    found.apply(stamp.claimed(index))
    delta = index.handle(stamp.changed("app/headers.py", PYTHON), now=1.0)
    assert delta is not None
    found.apply(delta)
    assert found.literals is None
    ranked = {r.path: r for r in found.search("Invalid header value for a value", limit=5)}
    assert "literal" not in ranked["app/headers.py"].signals


QUESTION = """The run stops with `Invalid header value` and prints "retrying the request".
```
$ app --check
short test summary info
```
ValueError: cannot open the file
The summary says short test summary info at the end.
"""


def test_what_a_question_quotes_and_its_error_lines() -> None:
    assert error_lines(QUESTION) == (
        'The run stops with `Invalid header value` and prints "retrying the request".\n'
        "ValueError: cannot open the file"
    )
    assert quoted(QUESTION) == (
        "```\n$ app --check\nshort test summary info\n```\n"
        '`Invalid header value`\n"retrying the request"\n' + error_lines(QUESTION)
    )


def test_three_signals_over_three_parts_of_the_question() -> None:
    index = LiteralIndex()
    index.put("src/header.py", ["invalid header value"])
    index.put("src/terminal.py", ["short test summary info"])
    index.put("src/files.go", ["cannot open the file"])
    index.put("src/retry.go", ["retrying the request"])
    assert index.signals(QUESTION) == {
        "src/files.go": {"literal": 1.0, "literal_quoted": 1.0, "literal_error": 1.0},
        "src/header.py": {
            "literal": 0.666667,
            "literal_quoted": 0.666667,
            "literal_error": 0.666667,
        },
        "src/retry.go": {
            "literal": 0.666667,
            "literal_quoted": 0.666667,
            "literal_error": 0.666667,
        },
        "src/terminal.py": {"literal": 1.0, "literal_quoted": 1.0},
    }
    assert index.signals("short test summary info") == {"src/terminal.py": {"literal": 1.0}}
    assert LiteralIndex().signals(QUESTION) == {}

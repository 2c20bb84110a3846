"""Chunks: exact boundaries, ids, kinds and texts from small real files."""

from __future__ import annotations

from textwrap import dedent

from processors.chunks import chunk_file, is_document
from processors.parsing import parse_file
from stores.records import ChunkRecord, FileRecord
from stores.text.chunk_text import embed_text

PYTHON = '''\
"""Accounts and transfers."""
import os
from decimal import Decimal

LIMIT = 10


class Account(Base):
    """An account."""

    rate = 0.1

    def __init__(self, owner):
        self.owner = owner

    @property
    def balance(self) -> int:
        """Current balance."""
        return 0


def transfer(a, b):
    return a


if __name__ == "__main__":
    transfer(1, 2)
'''


def record(path: str, content: bytes, skipped: str | None = None) -> FileRecord:
    parsed = parse_file(path, content)
    return FileRecord(
        path=path,
        language=parsed.language,
        size=len(content),
        lines=parsed.lines,
        content_hash="h",
        skipped=skipped,
        parse_errors=parsed.parse_errors,
        problems=parsed.problems,
        symbols=parsed.symbols,
        imports=parsed.imports,
        origin="scan",
        commit=None,
        working_tree=True,
        producer="p",
    )


def chunks(path: str, source: str, **kw: int) -> tuple[ChunkRecord, ...]:
    content = source.encode()
    return chunk_file(record(path, content), content, **kw)


def outline(found: tuple[ChunkRecord, ...]) -> list[tuple[str, str, str | None, int, int]]:
    return [(c.id, c.kind, c.qualname, c.line_start, c.line_end) for c in found]


def by_id(found: tuple[ChunkRecord, ...]) -> dict[str, ChunkRecord]:
    return {c.id: c for c in found}


def test_python_file_chunks_functions_methods_class_outline_and_module_lines() -> None:
    found = chunks("bank/accounts.py", PYTHON)
    assert outline(found) == [
        ("bank/accounts.py#module:1", "MODULE", None, 1, 27),
        ("bank/accounts.py#Account", "CLASS", "Account", 8, 19),
        ("bank/accounts.py#Account.__init__", "METHOD", "Account.__init__", 13, 14),
        ("bank/accounts.py#Account.balance", "METHOD", "Account.balance", 16, 19),
        ("bank/accounts.py#transfer", "FUNCTION", "transfer", 22, 23),
    ]
    chunk = by_id(found)
    assert chunk["bank/accounts.py#module:1"].text == dedent(
        '''\
        """Accounts and transfers."""
        import os
        from decimal import Decimal

        LIMIT = 10

        if __name__ == "__main__":
            transfer(1, 2)'''
    )
    account = chunk["bank/accounts.py#Account"]
    assert account.text == dedent(
        '''\
        class Account(Base):
            """An account."""

            rate = 0.1

            def __init__(self, owner) ...

            def balance(self) -> int ...'''
    )
    assert (account.signature, account.doc) == ("class Account(Base)", "An account.")
    balance = chunk["bank/accounts.py#Account.balance"]
    assert balance.text == (
        "    @property\n"
        "    def balance(self) -> int:\n"
        '        """Current balance."""\n'
        "        return 0"
    )
    assert (balance.signature, balance.doc) == ("def balance(self) -> int", "Current balance.")
    assert chunk["bank/accounts.py#transfer"].text == "def transfer(a, b):\n    return a"


def test_javascript_file() -> None:
    source = dedent(
        """\
        import { a } from './a';

        const MAX = 3;

        export class Cart {
          constructor(items) {
            this.items = items;
          }

          total() {
            return this.items.length;
          }
        }

        /** Makes an empty cart. */
        export function makeCart() {
          return new Cart([]);
        }
        """
    )
    found = chunks("web/cart.js", source)
    assert outline(found) == [
        ("web/cart.js#module:1", "MODULE", None, 1, 15),
        ("web/cart.js#Cart", "CLASS", "Cart", 5, 13),
        ("web/cart.js#Cart.constructor", "METHOD", "Cart.constructor", 6, 8),
        ("web/cart.js#Cart.total", "METHOD", "Cart.total", 10, 12),
        ("web/cart.js#makeCart", "FUNCTION", "makeCart", 16, 18),
    ]
    chunk = by_id(found)
    assert chunk["web/cart.js#module:1"].text == (
        "import { a } from './a';\n\nconst MAX = 3;\n\n/** Makes an empty cart. */"
    )
    assert chunk["web/cart.js#Cart"].text == (
        "export class Cart {\n  constructor(items) ...\n\n  total() ...\n}"
    )
    make_cart = chunk["web/cart.js#makeCart"]
    # the leading comment is outside the function's lines: the embedded text adds it
    assert make_cart.doc == "Makes an empty cart."
    assert embed_text(make_cart) == (
        "web/cart.js makeCart\nMakes an empty cart.\n"
        "export function makeCart() {\n  return new Cart([]);\n}"
    )


def test_python_docstring_is_embedded_once() -> None:
    balance = by_id(chunks("bank/accounts.py", PYTHON))["bank/accounts.py#Account.balance"]
    assert embed_text(balance) == "bank/accounts.py Account.balance\n" + balance.text


def test_markdown_sections_packed_into_windows_and_fences_are_not_headings() -> None:
    source = dedent(
        """\
        # Title

        Intro text.

        ## Install

        ```
        # not a heading
        pip install x
        ```

        ## Usage

        Run it.
        """
    )
    found = chunks("README.md", source, window_lines=6)
    assert [(c.id, c.kind, c.signature, c.line_start, c.line_end) for c in found] == [
        ("README.md#doc:1", "DOC", "Title", 1, 3),
        ("README.md#doc:2", "DOC", "Install", 5, 10),
        ("README.md#doc:3", "DOC", "Usage", 12, 14),
    ]
    assert found[1].text == "## Install\n\n```\n# not a heading\npip install x\n```"
    packed = chunks("README.md", source, window_lines=50)
    assert outline(packed) == [("README.md#doc:1", "DOC", None, 1, 14)]
    assert packed[0].text == source.rstrip("\n")


def test_long_document_section_is_cut_at_a_blank_line() -> None:
    lines = [f"word{n}" if n % 4 else "" for n in range(1, 21)]
    found = chunks("notes.txt", "\n".join(lines) + "\n", window_lines=6)
    # windows of at most 6 lines end at a blank line in their second half (1-3, 5-7,
    # ...), then pack two by two
    assert [(c.line_start, c.line_end) for c in found] == [(1, 7), (9, 15), (17, 19)]
    assert found[0].text == "\n".join(lines[:7])


def test_skipped_minified_and_unknown_files_have_no_chunks() -> None:
    content = b"def f():\n    return 1\n"
    assert chunk_file(record("a.py", content, skipped="binary"), content) == ()
    assert chunks("data.json", '{"a": 1}\n') == ()
    assert chunks("empty.py", "") == ()
    minified = record("app.min.js", b"x")
    minified = minified.model_copy(update={"problems": ("minified",)})
    assert chunk_file(minified, b"var a=1;") == ()
    assert is_document("docs/README") and is_document("CHANGES.rst")
    assert not is_document("setup.cfg")


def test_ids_and_hashes_survive_an_edit_elsewhere_in_the_file() -> None:
    before = by_id(chunks("bank/accounts.py", PYTHON))
    edited = PYTHON.replace("import os\n", "import os\nimport sys\nimport json\n\n").replace(
        "return a\n", "return b\n"
    )
    after = by_id(chunks("bank/accounts.py", edited))
    assert after.keys() == before.keys()
    moved = "bank/accounts.py#Account.balance"
    assert (after[moved].line_start, before[moved].line_start) == (19, 16)
    assert after[moved].content_hash == before[moved].content_hash
    assert after[moved].content_hash == chunks("bank/accounts.py", PYTHON)[3].content_hash
    changed = "bank/accounts.py#transfer"
    assert after[changed].content_hash != before[changed].content_hash
    module = "bank/accounts.py#module:1"
    assert after[module].content_hash != before[module].content_hash


def test_repeated_qualnames_get_suffixes_in_line_order() -> None:
    source = dedent(
        """\
        class C:
            @property
            def x(self):
                return 1

            @x.setter
            def x(self, v):
                pass
        """
    )
    assert [c.id for c in chunks("c.py", source)] == ["c.py#C", "c.py#C.x", "c.py#C.x~2"]


def test_nested_functions_stay_in_their_function_and_interfaces_keep_members() -> None:
    source = dedent(
        """\
        def outer():
            def inner():
                class Local:
                    pass
            return inner
        """
    )
    assert outline(chunks("n.py", source)) == [("n.py#outer", "FUNCTION", "outer", 1, 5)]
    ts = "interface Shape {\n  area(): number;\n}\n"
    found = chunks("shape.ts", ts)
    assert outline(found) == [("shape.ts#Shape", "INTERFACE", "Shape", 1, 3)]
    assert found[0].text == ts.rstrip("\n")


def test_long_bodies_keep_their_head_and_their_full_line_range() -> None:
    body = "".join(f"    x{n} = {n}\n" for n in range(30))
    found = chunks("long.py", "def f():\n" + body, max_lines=5)
    assert outline(found) == [("long.py#f", "FUNCTION", "f", 1, 31)]
    assert found[0].text == "def f():\n    x0 = 0\n    x1 = 1\n    x2 = 2\n    x3 = 3"
    by_chars = chunks("long.py", "def f():\n" + body, max_chars=30)
    assert by_chars[0].text == "def f():\n    x0 = 0\n    x1 = 1"


def test_long_module_code_is_cut_into_numbered_windows() -> None:
    source = "".join(f"A{n} = {n}\n" for n in range(1, 13))
    found = chunks("consts.py", source, window_lines=5)
    assert [(c.id, c.line_start, c.line_end) for c in found] == [
        ("consts.py#module:1", 1, 5),
        ("consts.py#module:2", 6, 10),
        ("consts.py#module:3", 11, 12),
    ]


def test_chunking_is_deterministic() -> None:
    assert chunks("bank/accounts.py", PYTHON) == chunks("bank/accounts.py", PYTHON)

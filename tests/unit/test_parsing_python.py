"""Python files: exact symbols, imports and references from small sources."""

from __future__ import annotations

import random

from processors.parsing import ParseResult
from processors.parsing.python_refs import Spans
from tests.unit.parsing_records import Symbols, imported, parsed, references


def parse(source: str) -> ParseResult:
    return parsed("pkg/mod.py", source)


# Exported unless a test says otherwise.
symbol = Symbols(exported=lambda name, signature: True)


def test_classes_methods_and_nested_functions_with_their_parents() -> None:
    result = parse(
        """
        class Outer(Base, metaclass=Meta):
            class Inner:
                def method(self, x: int) -> int:
                    return x

            @property
            def prop(self): ...

            async def run(self):
                def helper():
                    class Local: pass
                return helper

        def top(a, *args, b=1, **kw):
            pass
        """
    )
    assert result.language == "python"
    assert result.symbols == (
        symbol("Outer", "CLASS", (1, 12), "class Outer(Base, metaclass=Meta)", bases=("Base",)),
        symbol("Outer.Inner", "CLASS", (2, 4), "class Inner"),
        symbol("Outer.Inner.method", "METHOD", (3, 4), "def method(self, x: int) -> int"),
        symbol("Outer.prop", "METHOD", (6, 7), "def prop(self)"),
        symbol("Outer.run", "METHOD", (9, 12), "async def run(self)"),
        symbol("Outer.run.helper", "FUNCTION", (10, 11), "def helper()"),
        symbol("Outer.run.helper.Local", "CLASS", (11, 11), "class Local"),
        symbol("top", "FUNCTION", (14, 15), "def top(a, *args, b=1, **kw)"),
    )
    assert result.imports == ()
    assert (result.parse_errors, result.problems) == (0, ())


def test_definitions_under_compound_statements_keep_their_scope() -> None:
    result = parse(
        """
        if TYPE_CHECKING:
            def typed(): ...
        else:
            class Fallback:
                if sys.version_info >= (3, 12):
                    def new(self): ...
        try:
            import ujson as json
        except ImportError:
            json = None
        """
    )
    assert result.symbols == (
        symbol("typed", "FUNCTION", (2, 2), "def typed()"),
        symbol("Fallback", "CLASS", (4, 6), "class Fallback"),
        symbol("Fallback.new", "METHOD", (6, 6), "def new(self)"),
        symbol("json", "VARIABLE", (10, 10), "json = None"),
    )
    assert result.imports == (imported("ujson", (), 8, alias="json"),)


def test_docstrings_are_cleaned_and_capped() -> None:
    long = "x" * 400
    result = parse(
        f'''
        class A:
            # a comment may come first
            """Class doc."""

        def f():
            r"""Raw doc.

               Indented second paragraph.
            """

        def g():
            \'single\'

        def h():
            x = "not a docstring"

        def i():
            """{long}"""
        '''
    )
    assert [s.doc for s in result.symbols] == [
        "Class doc.",
        "Raw doc.\n\nIndented second paragraph.",
        "single",
        None,
        "x" * 300,
    ]


def test_module_level_assignments_are_variables() -> None:
    result = parse(
        """
        __all__ = ["f"]
        a = b = 1
        x, (y, *rest) = values
        count: int
        limit: int = 10
        _ = ignored()
        obj.attr = 1
        items[0] = 2
        total += 1
        type Alias[T] = list[T]

        def f():
            local = 1

        class C:
            attribute = 2
        """
    )
    assert result.symbols == (
        symbol("__all__", "VARIABLE", (1, 1), '__all__ = ["f"]'),
        symbol("a", "VARIABLE", (2, 2), "a = b = 1"),
        symbol("b", "VARIABLE", (2, 2), "a = b = 1"),
        symbol("x", "VARIABLE", (3, 3), "x, (y, *rest) = values"),
        symbol("y", "VARIABLE", (3, 3), "x, (y, *rest) = values"),
        symbol("rest", "VARIABLE", (3, 3), "x, (y, *rest) = values"),
        symbol("count", "VARIABLE", (4, 4), "count: int"),
        symbol("limit", "VARIABLE", (5, 5), "limit: int = 10"),
        symbol("Alias", "TYPE", (10, 10), "type Alias[T] = list[T]"),
        symbol("f", "FUNCTION", (12, 13), "def f()"),
        symbol("C", "CLASS", (15, 16), "class C"),
    )


def test_imports_of_every_form_in_source_order() -> None:
    result = parse(
        """
        from __future__ import annotations
        import os
        import a.b as c, d
        from a.b import x, y as z
        from . import sibling
        from ..pkg.mod import *
        from .rel import (
            one,
            two as deux,
        )

        def lazy():
            import json
            try:
                from yaml import safe_load
            except ImportError:
                pass
        """
    )
    assert result.imports == (
        imported("__future__", ("annotations",), 1),
        imported("os", (), 2, alias="os"),
        imported("a.b", (), 3, alias="c"),
        imported("d", (), 3, alias="d"),
        imported("a.b", ("x", "y"), 4, local_names=("x", "z")),
        imported("", ("sibling",), 5, level=1),
        imported("pkg.mod", ("*",), 6, level=2),
        imported("rel", ("one", "two"), 7, level=1, local_names=("one", "deux")),
        imported("json", (), 13, alias="json"),
        imported("yaml", ("safe_load",), 15),
    )


def test_decorators_widen_the_span_but_not_the_signature() -> None:
    result = parse(
        """
        @app.get(
            "/items",
        )
        async def read_items(
            skip: int = 0,
            limit: int = 10,  # a comment
        ) -> list[Item]:  # trailing
            # body comment
            return []
        """
    )
    assert result.symbols == (
        symbol(
            "read_items",
            "FUNCTION",
            (1, 9),
            "async def read_items(skip: int = 0, limit: int = 10,) -> list[Item]",
        ),
    )


def test_long_signatures_are_capped_with_an_ellipsis() -> None:
    parameters = ", ".join(f"p{i}: int = {i}" for i in range(40))
    (only,) = parse(f"def wide({parameters}):\n    pass\n").symbols
    assert len(only.signature) == 200
    assert only.signature.startswith("def wide(p0: int = 0, p1: int = 1")
    assert only.signature.endswith("…")


def test_references_are_calls_types_and_reads_of_module_level_names() -> None:
    result = parse(
        """
        import os.path
        import numpy as np
        from app import models
        from .util import helper as assist, LIMIT

        TIMEOUT = 3


        @register
        @app.route("/x")
        class Service(models.Model, Generic[T], metaclass=Meta):
            def run(self, user: models.User, items: list["Later"]) -> dict[str, np.ndarray]:
                data: Optional[Config] = assist(user, TIMEOUT)
                self.save(os.path.join(data), f().g(), items[0].h())
                return np.pi, settings.DEBUG, LIMIT, len(items)

            def _hide(self, TIMEOUT):
                self.value = TIMEOUT
                try:
                    import json
                except (ValueError, errors.Bad):
                    return [LIMIT for LIMIT in range(3)]


        def tune():
            global TIMEOUT
            TIMEOUT = 5
            return TIMEOUT
        """
    )
    assert references(result) == [
        ("call", "register", None, 9, 1, "Service"),
        ("call", "route", "app", 10, 5, "Service"),
        ("type", "Model", "models", 11, 21, "Service"),
        ("type", "Generic", None, 11, 28, "Service"),
        ("type", "T", None, 11, 36, "Service"),
        ("type", "User", "models", 12, 31, "Service.run"),
        ("type", "list", None, 12, 44, "Service.run"),
        ("type", "dict", None, 12, 62, "Service.run"),
        ("type", "str", None, 12, 67, "Service.run"),
        ("type", "ndarray", "np", 12, 75, "Service.run"),
        ("type", "Optional", None, 13, 14, "Service.run"),
        ("type", "Config", None, 13, 23, "Service.run"),
        ("call", "assist", None, 13, 33, "Service.run"),
        ("use", "TIMEOUT", None, 13, 46, "Service.run"),
        ("call", "save", "self", 14, 13, "Service.run"),
        ("use", "path", "os", 14, 21, "Service.run"),
        ("call", "join", "os.path", 14, 26, "Service.run"),
        ("call", "f", None, 14, 38, "Service.run"),
        ("call", "g", "<expr>", 14, 42, "Service.run"),
        ("call", "h", "<expr>", 14, 56, "Service.run"),
        ("use", "pi", "np", 15, 18, "Service.run"),
        ("use", "DEBUG", "settings", 15, 31, "Service.run"),
        ("use", "LIMIT", None, 15, 38, "Service.run"),
        ("call", "len", None, 15, 45, "Service.run"),
        # TIMEOUT is a parameter of _hide, LIMIT the comprehension's own, json a local import
        ("type", "ValueError", None, 21, 16, "Service._hide"),
        ("type", "Bad", "errors", 21, 35, "Service._hide"),
        ("call", "range", None, 22, 39, "Service._hide"),
        ("use", "TIMEOUT", None, 28, 11, "tune"),  # declared global, so not a local
    ]
    assert result.imports == (
        imported("os.path", (), 1, alias="os"),
        imported("numpy", (), 2, alias="np"),
        imported("app", ("models",), 3),
        imported("util", ("helper", "LIMIT"), 4, level=1, local_names=("assist", "LIMIT")),
        imported("json", (), 20, alias="json"),
    )


def test_module_level_code_references_with_no_scope_or_the_variable_it_defines() -> None:
    result = parse(
        """
        from conf import settings
        if settings.DEBUG:
            setup(settings)
        handler = make(settings)
        type Alias[K] = dict[K, Config]
        def first[T](items: list[T]) -> T: ...
        """
    )
    assert references(result) == [
        ("use", "DEBUG", "settings", 2, 12, None),
        ("call", "setup", None, 3, 4, None),
        ("use", "settings", None, 3, 10, None),
        ("call", "make", None, 4, 10, "handler"),
        ("use", "settings", None, 4, 15, "handler"),
        # type parameters are local names, not references
        ("type", "dict", None, 5, 16, "Alias"),
        ("type", "Config", None, 5, 24, "Alias"),
        ("type", "list", None, 6, 20, "first"),
    ]


def test_bases_as_written_and_exported_by_the_underscore_convention() -> None:
    result = parse(
        """
        class A(Base, models.Model, Generic[T], metaclass=Meta, *mixins): ...
        class _Hidden(namedtuple("P", "x")):
            def __init__(self): ...
            def _helper(self): ...
        _cache = {}
        """
    )
    assert [(s.qualname, s.bases, s.exported) for s in result.symbols] == [
        ("A", ("Base", "models.Model", "Generic"), True),
        ("_Hidden", (), False),
        ("_Hidden.__init__", (), True),
        ("_Hidden._helper", (), False),
        ("_cache", (), False),
    ]


def test_module_level_instances_name_the_callable_they_are_made_by() -> None:
    result = parse(
        """
        router = ConnectionRouter()
        register = template . Library()
        a = b = Signal(use_caching=True)
        x, y = Pair()
        made = factory()(1)
        typed = Registry[int]()
        count: int = int("1")
        limit = 10

        class C:
            inner = Library()
        """
    )
    assert [(s.qualname, s.value_type) for s in result.symbols] == [
        ("router", "ConnectionRouter"),
        ("register", "template.Library"),
        ("a", "Signal"),
        ("b", "Signal"),
        ("x", None),  # unpacked: no one class
        ("y", None),
        ("made", None),
        ("typed", None),
        ("count", "int"),  # the resolver keeps only what names a class of the repository
        ("limit", None),
        ("C", None),
    ]


def test_super_calls_are_qualified_by_super() -> None:
    result = parse(
        """
        class Child(Base):
            def save(self):
                super().save()
                super(Child, self).clean()
                super(  # the class named explicitly
                    Child, self
                ).full_clean()
                super(Base, self).reset()
                super().meta.check()

        def helper(obj):
            super(Child, obj).run()
        """
    )
    calls = [r for r in result.references if r.kind == "call" and r.name != "super"]
    assert [(r.name, r.qualifier, r.scope) for r in calls] == [
        ("save", "super", "Child.save"),
        ("clean", "super", "Child.save"),
        ("full_clean", "super", "Child.save"),
        ("reset", "<expr>", "Child.save"),  # starts past Base in the MRO, not at Child
        ("check", "<expr>", "Child.save"),
        ("run", "<expr>", "helper"),
    ]


def test_spans_hold_a_position_as_any_of_their_ranges_does() -> None:
    rng = random.Random(7)
    for _ in range(200):
        ranges = []
        for _ in range(rng.randint(0, 12)):
            start = rng.randint(0, 100)
            ranges.append((start, start + rng.randint(1, 30)))
        spans = Spans(ranges)
        for at in range(-1, 135):
            assert (at in spans) == any(start <= at < end for start, end in ranges), ranges

"""Benchmarks, run on demand (``python -m tests.bench.NAME``), never by the test suite.

Each writes a Markdown table to stdout, progress to stderr and its numbers to
``tests/bench/out/NAME.json`` (gitignored).
"""

"""A file's purpose line skips the header boilerplate files open with (issue 20)."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from processors.parsing.summary import purpose

HEADERS = {
    "python": (
        "#!/usr/bin/env python3\n"
        "# -*- coding: utf-8 -*-\n"
        "# Copyright (C) 2001-2006 Python Software Foundation\n"
        "# Author: Ben Gertzfield\n"
        "# Contact: email-sig@python.org\n"
        "\n"
        '"""Quoted-printable content transfer encoding.\n\nMore below."""\n'
        "import re\n"
    ),
    "python comments only": (
        "# vim: set ts=4 sw=4 :\n"
        "# SPDX-License-Identifier: MIT\n"
        "#\n"
        "# Reads the settings file.\n"
        "# Falls back on defaults.\n"
        "\n"
        "import os\n"
    ),
    "go": (
        "// Copyright 2014 Manu Martinez-Almeida. All rights reserved.\n"
        "// Use of this source code is governed by a MIT style\n"
        "// license that can be found in the LICENSE file.\n"
        "\n"
        "//go:build !nomsgpack\n"
        "\n"
        "// Package render writes responses.\n"
        "package render\n"
    ),
    "java": (
        "/*\n"
        " * Copyright 2002-2024 the original author or authors.\n"
        " *\n"
        ' * Licensed under the Apache License, Version 2.0 (the "License");\n'
        " * you may not use this file except in compliance with the License.\n"
        " */\n"
        "\n"
        "/**\n"
        " * Resolves view names to views.\n"
        " * @author Juergen Hoeller\n"
        " */\n"
        "package org.example;\n"
    ),
    "javascript": (
        "#!/usr/bin/env node\n"
        "/* eslint-disable no-console */\n"
        "/**\n"
        " * @license MIT\n"
        " * (c) 2020 Someone\n"
        " */\n"
        "// @fileoverview Parses command lines.\n"
        "const x = 1;\n"
    ),
    "typescript": (
        "// SPDX-License-Identifier: Apache-2.0\n"
        "// @ts-nocheck\n"
        "/* Retries failed requests with backoff. */\n"
        "export const retry = 1;\n"
    ),
    "rust": (
        "// Copyright 2018 Developers of the Rand project.\n"
        "// Licensed under the Apache License, Version 2.0\n"
        "\n"
        "//! Random number generators and adapters.\n"
        "//!\n"
        "//! Details follow.\n"
        "#![allow(unused)]\n"
        "use std::fmt;\n"
    ),
    "name then copyright": "// ky: tiny HTTP client.\n// Copyright (c) Sindre\n\nexport {};\n",
    "boilerplate only": "# Copyright 2020 Acme\n# Author: Jo\n\nimport os\n",
    "block without stars": "/*\nCopyright 2019 Acme\n*/\n\n/*\nDraws the tree.\n*/\nint x;\n",
}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("python", "Quoted-printable content transfer encoding."),
        ("python comments only", "Reads the settings file. Falls back on defaults."),
        ("go", "Package render writes responses."),
        ("java", "Resolves view names to views."),
        ("javascript", "Parses command lines."),
        ("typescript", "Retries failed requests with backoff."),
        ("rust", "Random number generators and adapters."),
        ("name then copyright", "ky: tiny HTTP client."),
        ("boilerplate only", None),
        ("block without stars", "Draws the tree."),
    ],
)
def test_the_purpose_skips_licence_author_encoding_shebang_and_modeline(
    case: str, expected: str | None
) -> None:
    assert purpose(HEADERS[case].encode(), ()) == expected


def test_a_plain_docstring_or_leading_comment_is_still_the_purpose() -> None:
    assert purpose(b'"""Parses things."""\nx = 1\n', ()) == "Parses things."
    assert purpose(b"// Serves the files.\n\npackage web\n", ()) == "Serves the files."
    assert purpose(b"x = 1\n", ()) is None


def test_no_purpose_of_the_stdlib_email_package_is_its_header() -> None:
    root = Path(sysconfig.get_paths()["stdlib"]) / "email"
    if not root.is_dir():
        pytest.skip("no stdlib email package here")
    found = {p.name: purpose(p.read_bytes(), ()) for p in sorted(root.glob("*.py"))}
    headers = [n for n, line in found.items() if line and ("Author" in line or "Copyright" in line)]
    assert headers == []
    quoted = "Quoted-printable content transfer encoding per RFCs 2045-2047."
    assert found["quoprimime.py"] == quoted
    assert found["feedparser.py"] == "FeedParser - An email feed parser."
    assert found["charset.py"] is None  # a header and no docstring

"""A licence preamble is found in each language's comment forms, and nothing else is."""

from __future__ import annotations

import pytest

from coderag_tui.core.prompt.preamble import licence_preamble

RUST = """\
// Copyright (c) 2017 fd developers
// Licensed under the Apache License, Version 2.0
// <LICENSE-APACHE or http://www.apache.org/licenses/LICENSE-2.0>
// or the MIT license <LICENSE-MIT or http://opensource.org/licenses/MIT>,
// at your option. All files in the project carrying such
// notice may not be copied, modified, or distributed except
// according to those terms.

use std::io;
"""

JAVA = """\
/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.
 *
 * http://www.apache.org/licenses/LICENSE-2.0
 */
package org.example;

/** A class with its own doc comment. */
public class A {}
"""

GO = """\
// Copyright 2020 The Example Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package walk finds files and follows their links.
package walk
"""

PYTHON = """\
#!/usr/bin/env python
# Copyright 2019 Example Ltd. SPDX-License-Identifier: MIT

\"\"\"The module's own docstring stays.\"\"\"
import os
"""

RUBY = """\
# Licensed under
# the terms in LICENSE.

require "json"
"""

C_ONE_LINE = """\
/* SPDX-License-Identifier: GPL-2.0 */
#include <stdio.h>
"""


@pytest.mark.parametrize(
    ("text", "language", "last"),
    [
        (RUST, "rust", 7),
        (JAVA, "java", 6),
        (GO, "go", 3),
        (PYTHON, "python", 2),
        (C_ONE_LINE, "c", 1),
        (RUBY, "ruby", 2),
    ],
    ids=[
        "rust-line-comments",
        "java-block",
        "go-before-package-doc",
        "python-after-shebang",
        "c-one-line",
        "ruby-wrapped",
    ],
)
def test_the_notice_is_the_preamble_and_what_follows_it_is_not(
    text: str, language: str, last: int
) -> None:
    assert licence_preamble(text.splitlines(), language) == last


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("// Package licence reads the licences of modules.\npackage licence\n", "go"),
        ("#![allow(dead_code)]\n// Copyright 2020 someone\nfn main() {}\n", "rust"),
        ("# MIT License\n\nCopyright (c) 2020 someone\n", "markdown"),
        ("// Copyright 2020 someone\n// Licensed under the MIT license.\n", "rust"),
        ("# Copyright 2020 someone\n", None),
    ],
    ids=["no-notice", "code-first", "prose", "nothing-but-the-notice", "unknown-language"],
)
def test_no_preamble_without_a_notice_above_code(text: str, language: str | None) -> None:
    assert licence_preamble(text.splitlines(), language) == 0


PHP = """\
<?php declare(strict_types=1);

/*
 * This file is part of the Example package.
 *
 * (c) Someone <someone@example.org>
 *
 * For the full copyright and license information, please view the LICENSE
 * file that was distributed with this source code.
 */

namespace Example;
"""


def test_php_s_opening_tag_goes_with_the_notice_below_it() -> None:
    assert licence_preamble(PHP.splitlines(), "php") == 10

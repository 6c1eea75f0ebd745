"""Imports read with tree-sitter from tiny Python, JavaScript, TypeScript, Go, Java and Rust
files, resolved to the repository's files (packages and the standard library to none)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coderag_tui.core.index.imports import ImportGraph, file_imports

FILES: dict[str, str] = {
    # Python: absolute, relative, `from package import module`, stdlib
    "app/__init__.py": "",
    "app/models.py": "class User:\n    pass\n",
    "app/db/__init__.py": "",
    "app/db/session.py": "def open_session():\n    pass\n",
    "app/views.py": (
        "import os\nfrom .models import User\nfrom app.db import session\nfrom . import util\n"
    ),
    "app/util.py": "import json\n",
    # JavaScript and TypeScript: relative specifiers with and without extensions, packages
    "web/index.js": (
        'import { render } from "./render";\nconst api = require("../lib/api.js");\n'
        'import React from "react";\n'
    ),
    "web/render.ts": 'import type { Page } from "./types";\nexport function render() {}\n',
    "web/types.ts": "export interface Page { title: string }\n",
    "lib/api.js": "module.exports = {};\n",
    "lib/widgets/index.js": "export const w = 1;\n",
    "lib/use.js": 'import { w } from "./widgets";\n',
    # Go: the folder whose path the import path ends with
    "go.mod": "module github.com/acme/shop\n",
    "main.go": (
        'package main\n\nimport (\n\t"fmt"\n\t"github.com/acme/shop/internal/render"\n)\n\n'
        "func main() { fmt.Println(render.Page()) }\n"
    ),
    "internal/render/page.go": 'package render\n\nfunc Page() string { return "" }\n',
    "internal/render/page_test.go": "package render\n",
    # Java: a class, a static member of a class, a package wildcard
    "src/main/java/com/acme/App.java": (
        "package com.acme;\n\nimport com.acme.util.Strings;\n"
        "import static com.acme.util.Maths.max;\nimport com.acme.model.*;\n"
        "import java.util.List;\n\nclass App {}\n"
    ),
    "src/main/java/com/acme/util/Strings.java": "package com.acme.util;\nclass Strings {}\n",
    "src/main/java/com/acme/util/Maths.java": "package com.acme.util;\nclass Maths {}\n",
    "src/main/java/com/acme/model/Order.java": "package com.acme.model;\nclass Order {}\n",
    "src/main/java/com/acme/model/Line.java": "package com.acme.model;\nclass Line {}\n",
    # Rust: `mod x;`, `use crate::…`, `use super::…`, std
    "crate/src/lib.rs": "mod config;\nmod net;\nuse std::fmt;\n",
    "crate/src/config.rs": "pub struct Settings;\n",
    "crate/src/net/mod.rs": "mod client;\n",
    "crate/src/net/client.rs": (
        "use crate::config::Settings;\nuse super::super::config;\npub fn get(_: Settings) {}\n"
    ),
}


@pytest.fixture
def graph(tmp_path: Path) -> ImportGraph:
    for rel, text in FILES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return ImportGraph.build(FILES, lambda p: (tmp_path / p).read_bytes())


def test_python_imports_resolve_to_modules_and_packages(graph: ImportGraph) -> None:
    assert graph.imports["app/views.py"] == (
        "app/models.py",
        "app/db/__init__.py",
        "app/db/session.py",
        "app/__init__.py",
        "app/util.py",
    )
    assert graph.imports["app/util.py"] == ()  # json is the standard library's


def test_javascript_and_typescript_imports(graph: ImportGraph) -> None:
    assert graph.imports["web/index.js"] == ("web/render.ts", "lib/api.js")
    assert graph.imports["web/render.ts"] == ("web/types.ts",)
    assert graph.imports["lib/use.js"] == ("lib/widgets/index.js",)


def test_go_imports_take_the_package_folder_without_its_tests(graph: ImportGraph) -> None:
    assert graph.imports["main.go"] == ("internal/render/page.go",)


def test_java_imports_a_class_a_static_member_and_a_package(graph: ImportGraph) -> None:
    base = "src/main/java/com/acme"
    assert graph.imports[f"{base}/App.java"] == (
        f"{base}/util/Strings.java",
        f"{base}/util/Maths.java",
        f"{base}/model/Line.java",
        f"{base}/model/Order.java",
    )


def test_rust_modules_and_use_paths(graph: ImportGraph) -> None:
    assert graph.imports["crate/src/lib.rs"] == ("crate/src/config.rs", "crate/src/net/mod.rs")
    assert graph.imports["crate/src/net/mod.rs"] == ("crate/src/net/client.rs",)
    assert graph.imports["crate/src/net/client.rs"] == ("crate/src/config.rs",)


def test_related_files_are_the_imports_then_the_importers(graph: ImportGraph) -> None:
    assert graph.related("crate/src/config.rs") == (
        "crate/src/lib.rs",
        "crate/src/net/client.rs",
    )
    assert graph.related("app/models.py") == ("app/views.py",)
    assert graph.related("README.md") == ()


def test_file_imports_as_written() -> None:
    assert file_imports(b"import a.b as c\nfrom ..x import y\n", "python") == [
        "a.b",
        "..x",
        "..x.y",
    ]
    # a call to something other than require is not an import
    assert file_imports(b'load("./a");\nrequire("./b");\n', "javascript") == ["./b"]
    assert file_imports(b"anything", "markdown") == []

"""The core must stay importable without textual (the faces are optional layers on top)."""

from __future__ import annotations

import subprocess
import sys


def test_core_does_not_import_textual() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import coderag_tui.core as core\n"
        "for m in pkgutil.iter_modules(core.__path__):\n"
        "    importlib.import_module('coderag_tui.core.' + m.name)\n"
        "import coderag_tui.settings\n"
        "bad = sorted(n for n in sys.modules if n == 'textual' or n.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core imported textual modules: {out.stdout.strip()}"

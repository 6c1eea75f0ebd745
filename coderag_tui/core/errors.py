"""The root of every error coderag raises on purpose.

Each carries one sentence a person can act on. A face catches `CoderagError` (and, where it
reads or writes files, `OSError`) and shows the sentence; anything else is a bug, which
surfaces as one (the TUI writes a crash report, the CLI a traceback) instead of being
turned into a vague message.
"""

from __future__ import annotations


class CoderagError(Exception):
    """A failure coderag expected and can explain: the message is one sentence."""

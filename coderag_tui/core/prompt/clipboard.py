"""Getting a prompt to the user's clipboard: pyperclip, else OSC 52 via the terminal, and a file.

pyperclip drives the system tools (xclip, xsel, wl-copy, pbcopy, clip.exe …). Inside tmux the
text goes into tmux's own paste buffer (`tmux load-buffer -w`), which tmux also offers to the
outer terminal's clipboard unless its `set-clipboard` option is off: an application's own OSC 52
would be dropped by tmux's default (`set-clipboard external`). Elsewhere, over SSH or on a
headless box, most terminal emulators accept the OSC 52 escape sequence
`ESC ] 52 ; c ; <base64> BEL`, which sets the clipboard of the machine the terminal runs on.
The result always says which of these happened and what it could not know, because a silent
failure here costs the user a paste of the wrong thing.
"""

from __future__ import annotations

import base64
import io
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from coderag_tui.core.safe_write import UnsafePath, write_atomically
from coderag_tui.core.visible import one_line

# pyperclip's copy-function names -> the mechanism a user recognises.
MECHANISMS = {
    "copy_xclip": "xclip",
    "copy_xsel": "xsel",
    "copy_wl": "wl-copy",
    "copy_osx_pbcopy": "pbcopy",
    "copy_osx_pyobjc": "pyobjc",
    "copy_qt": "Qt",
    "copy_klipper": "klipper",
    "copy_windows": "Windows clipboard",
    "copy_wsl": "clip.exe",
    "copy_dev_clipboard": "/dev/clipboard",
}
OSC52_MESSAGE = "sent to the terminal via OSC 52 — your terminal must allow clipboard writes"
# Several terminals (and tmux's default buffer) refuse OSC 52 payloads beyond roughly this.
OSC52_SOFT_LIMIT = 100_000


@dataclass(frozen=True)
class CopyResult:
    """What happened to the text: `ok` if it reached at least one place, `method`, one message."""

    ok: bool
    method: str  # e.g. "xclip", "osc52", "file", "xclip+file", "none"
    message: str


def osc52_sequence(text: str, *, tmux: bool = False) -> bytes:
    """The OSC 52 "set clipboard" sequence for `text`, wrapped for tmux passthrough if asked."""
    payload = base64.b64encode(text.encode("utf-8"))
    sequence = b"\x1b]52;c;" + payload + b"\x07"
    if tmux:
        return b"\x1bPtmux;" + sequence.replace(b"\x1b", b"\x1b\x1b") + b"\x1b\\"
    return sequence


def _write(stream: IO[Any], data: bytes) -> None:
    if isinstance(stream, io.TextIOBase):
        stream.write(data.decode("ascii"))
    else:
        stream.write(data)
    stream.flush()


def send_osc52(
    text: str, *, env: Mapping[str, str] | None = None, stream: IO[Any] | None = None
) -> tuple[bool, str]:
    """Write the OSC 52 sequence to `stream` (default: /dev/tty); (ok, message)."""
    env = os.environ if env is None else env
    data = osc52_sequence(text, tmux=bool(env.get("TMUX")))
    try:
        if stream is not None:
            _write(stream, data)
        else:
            # The controlling terminal, not stdout: stdout may be a pipe into another program.
            with open("/dev/tty", "wb", buffering=0) as tty:
                _write(tty, data)
    except OSError as exc:
        return False, (
            f"no clipboard tool and no terminal to send OSC 52 to ({exc.strerror or exc}): "
            "install xclip, xsel or wl-copy, or use --out FILE"
        )
    message = OSC52_MESSAGE
    if env.get("TMUX"):
        message += " (through tmux, which must pass it on: `set -g allow-passthrough on`)"
    if len(data) > OSC52_SOFT_LIMIT:
        message += f"; {len(data) // 1024} KiB is more than some terminals accept — use --out FILE"
    return True, message


TMUX_TIMEOUT_S = 5.0


def _tmux(args: list[str], env: Mapping[str, str], data: bytes | None = None) -> str | None:
    """Run a tmux client command against the session `env` names; its output, or None."""
    try:
        proc = subprocess.run(
            ["tmux", *args],
            input=data,
            capture_output=True,
            env=dict(env),
            timeout=TMUX_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


def copy_in_tmux(text: str, env: Mapping[str, str]) -> tuple[bool, str]:
    """Inside tmux: load the text into tmux's paste buffer and let tmux offer it to the outer
    terminal's clipboard; (ok, message saying where it went and what could not be known)."""
    data = text.encode("utf-8", "replace")
    # -w also sends it to the outer terminal's clipboard (tmux 3.2+); older tmux lacks -w.
    if _tmux(["load-buffer", "-w", "-"], env, data) is None and (
        _tmux(["load-buffer", "-"], env, data) is None
    ):
        return False, "tmux did not take the text (tmux load-buffer failed)"
    message = "in tmux's paste buffer (prefix + ] pastes it)"
    if _tmux(["show-options", "-gv", "set-clipboard"], env) == "off":
        return True, (
            f"{message}; tmux's set-clipboard is off, so your terminal's clipboard did not get "
            "it: add `set -g set-clipboard on` to ~/.tmux.conf"
        )
    return True, f"{message} and offered by tmux to your terminal's clipboard, if it allows"


def copy_with_pyperclip(text: str) -> tuple[str | None, str]:
    """Copy with pyperclip's mechanism for this system; (mechanism or None, why it failed).

    `why` is empty when the system simply has no clipboard tool (the usual headless case).
    """
    try:
        import pyperclip
    except ImportError:
        return None, ""
    try:
        copy_fn, paste_fn = pyperclip.determine_clipboard()
    except Exception as exc:  # pyperclip probes GUI toolkits, which fail in many ways
        return None, f"pyperclip found no clipboard ({exc})"
    if not copy_fn:  # pyperclip's "no clipboard" stub is falsy
        return None, ""
    mechanism = MECHANISMS.get(getattr(copy_fn, "__name__", ""), "pyperclip")
    try:
        copy_fn(text)
    except Exception as exc:
        return None, f"{mechanism} failed ({exc})"
    if mechanism in ("xclip", "xsel", "wl-copy"):
        # These tools exit quietly when the display is gone (e.g. stale SSH forwarding);
        # reading the clipboard back is the only way to know the copy landed.
        try:
            landed = str(paste_fn()).rstrip("\n") == text.rstrip("\n")
        except Exception:
            landed = False
        if not landed:
            return None, f"{mechanism} ran but the clipboard did not change"
    return mechanism, ""


def copy_text(
    text: str,
    *,
    out: Path | None = None,
    osc52_stream: IO[Any] | None = None,
    clipboard: bool = True,
    env: Mapping[str, str] | None = None,
    use_pyperclip: bool = True,
    guarded: Path | None = None,
) -> CopyResult:
    """Put `text` on the clipboard (pyperclip, else OSC 52) and/or into `out`; say what happened.

    `out` is never written through a symbolic link, nor through a linked folder inside
    `guarded` (the repository): see `core.safe_write`.
    """
    methods: list[str] = []
    messages: list[str] = []
    failures: list[str] = []
    if clipboard:
        mechanism, why = copy_with_pyperclip(text) if use_pyperclip else (None, "")
        env = os.environ if env is None else env
        in_tmux = bool(env.get("TMUX")) and shutil.which("tmux") is not None
        if mechanism is not None:
            methods.append(mechanism)
            messages.append(f"copied ({mechanism})")
        elif in_tmux and (tmux := copy_in_tmux(text, env))[0]:
            methods.append("tmux")
            messages.append(f"{why}; {tmux[1]}" if why else tmux[1])
        else:
            ok, message = send_osc52(text, env=env, stream=osc52_stream)
            (methods if ok else failures).append("osc52")
            messages.append(f"{why}; {message}" if why else message)
    if out is not None:
        try:
            write_atomically(out, text, guarded=guarded)
        except UnsafePath as exc:
            failures.append("file")
            messages.append(one_line(str(exc)).rstrip("."))
        except OSError as exc:
            failures.append("file")
            messages.append(
                f"could not save to {out} ({exc.strerror or exc}): choose a writable path"
            )
        except UnicodeEncodeError:
            failures.append("file")
            messages.append(
                f"could not save to {out} (the text holds characters that are not UTF-8); "
                f"{out} was left as it was"
            )
        else:
            methods.append("file")
            messages.append(f"saved to {out}")
    if not methods and not failures:
        return CopyResult(
            ok=False, method="none", message="nothing to do: no clipboard and no file"
        )
    return CopyResult(
        ok=bool(methods),
        method="+".join(methods) if methods else "none",
        message="; ".join(messages),
    )


# What a prompt rendered by each bundled template is; a user's own template may be anything.
SUFFIXES = {"markdown": ".md", "xml": ".xml"}
# Only these ways put the text where a paste finds it, as far as coderag can know.
SURE_METHODS = frozenset(MECHANISMS.values()) | {"tmux", "pyperclip"}


def copied_for_sure(result: CopyResult) -> bool:
    """Did the text reach a clipboard coderag can vouch for (a system tool, tmux's buffer)?
    OSC 52 alone cannot say: a terminal that ignores it answers nothing."""
    return bool(SURE_METHODS & set(result.method.split("+")))


def file_stem(name: str) -> str:
    """A repository's name as a file name's start: only plain file-name characters (the
    folder's name is someone else's text)."""
    return re.sub(r"[^\w.-]", "_", name, flags=re.ASCII).lstrip(".") or "repo"


def keep_prompt(text: str, folder: Path, repo_name: str, template: str) -> CopyResult:
    """Save a prompt the clipboard may not have taken to `<folder>/<repo>-last-prompt.md`
    (`.xml` for the xml template, `.txt` for one's own), replacing the last one kept: what
    a failed copy leaves behind is one file per repository, not a new one per try."""
    path = folder / f"{file_stem(repo_name)}-last-prompt{SUFFIXES.get(template, '.txt')}"
    return copy_text(text, out=path, clipboard=False)

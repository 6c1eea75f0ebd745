"""Secrets in repository text, found when a file is indexed, so no prompt carries one silently.

The detectors are detect-secrets' (Yelp, 1.5) and a table of our own (`secret_formats`):
format detectors for cloud, code-host, payment, messaging and LLM providers' keys (AWS,
GitHub, GitLab, OpenAI, Anthropic, Google, Stripe, Slack, npm, PyPI, SendGrid, Twilio,
Mailchimp, Hugging Face …), JSON Web Tokens, `Bearer` headers, private-key blocks, passwords
in URLs (`://user:pass@`), secret-sounding assignments (`password = "…"`, by file type) and
high-entropy strings, with detect-secrets' heuristic filters for look-alikes (UUIDs,
`${templated}` values, `get_secret()` calls, sequences such as `ABCDEF…`). Its detectors
are used for every format they know, with their patterns as they are; the table adds the
formats they lack (OpenAI's project keys, Anthropic, Google, GitHub's fine-grained tokens,
bare npm tokens …) and replaces its JSON Web Token pattern, which stops before the signature.

Every format match must start at a word boundary (`ghs_` inside `weighs_` is no token) and
is masked to the end of the token it starts (letters, digits, `_` and `-`), so no tail of a
longer key is left behind. Values that are placeholders are no secrets: the name they are
assigned to (`SECRET = "secret"`, `password_field = "password"`), words such as `changeme`,
`development key` or `xxx…`, and short lower-case words (a dictionary word, not a generated
key); this holds for keyword assignments and for the password of a URL, never for a format.

High-entropy strings count where a line names a credential (one of the keywords), quoted, or
unquoted in config files (`API_TOKEN=9f2a…` in a `.env`), with detect-secrets' charsets and
limits; and anywhere as a quoted base64 blob of 32 or more characters (`Fernet(b"…")`) that
mixes upper case, lower case and digits, has the entropy of random bytes of its length, and
is no base64 of text. The `IPPublicDetector` is off (an address is not a credential), and so
are detect-secrets' `# pragma: allowlist secret` comments: a repository's own text cannot
vouch for itself, just as its `.coderag.toml` cannot switch holding secrets back off.

Only a prefilter is ours, because detect-secrets' plugins take ~65 µs a line in pure Python,
about a minute for the standard library's 970,000 lines. One `bytes.translate` lowers the
text and maps the rarest character of every needle to a sentinel byte (k, w, j, x, h and `/`
to one, c to another, the three quotes to a third), and one pattern per sentinel, starting
with that byte, runs at SRE's speed for a literal first character. Keywords (key, token,
secret, password, passwd, pwd, auth, credential) count only when an assignment of a literal
follows that starts with six characters other than spaces (quoted in code, unquoted allowed
in config files, as detect-secrets itself reads them). The needles of the format detectors
(`AKIA`, `ghp_`, `sk-proj-`, `hooks.slack.com/services/` …, each followed by as many token
characters as the format needs) and `://user:pass@` count anywhere; needles with none of the
sentinel characters (`glpat-`, `SG.`, `npm_`, `AIza`, `ASIA`, `Bearer `) count right after a
quote, as do a long base64 string, a Mailchimp key and a Telegram or Discord bot token: in
code a token is a string literal, and in a config file it is named (`GITLAB_TOKEN=glpat-…`),
which the keywords find. Only the lines they find reach the detectors. Lines longer than
MAX_SCANNED_LINE are scanned in windows of that size that overlap by WINDOW_OVERLAP
characters, each window only if the prefilter passes it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import os
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from coderag_tui.core.index.secret_formats import LIBRARY_NEEDLES, TOKEN_FORMATS
from coderag_tui.core.records import SecretFinding

if TYPE_CHECKING:
    from collections.abc import Callable

# Bump when the detectors, their limits or the prefilter change: stored findings are then
# recomputed from the stored texts (no file is read again).
SCANNER_VERSION = "2"
SCANNER_META_KEY = "secret_scanner"

# Entropy limits of detect-secrets' high-entropy plugins (their defaults are 4.5 and 3.0).
BASE64_LIMIT = 4.5
HEX_LIMIT = 3.0
# A value shorter than this is no credential worth holding back (`password = "x"` in tests).
MIN_SECRET_CHARS = 6
# Lines longer than this are scanned in windows of this size (the plugins' patterns
# backtrack on long lines), overlapping by WINDOW_OVERLAP so a token on a boundary is whole
# in one of them.
MAX_SCANNED_LINE = 4000
WINDOW_OVERLAP = 1000
# How far a private-key block may run past its BEGIN line.
MAX_KEY_BLOCK_LINES = 400
# A quoted base64 string with no keyword near it is a key from this length on.
MIN_BLOB_CHARS = 32
# Its entropy must reach that of 99% of random strings of its length: at 32 characters 4.2
# bits, growing by BLOB_LIMIT_STEP a character up to 4.9 (English-like identifiers and
# base64 of text stay well below).
BLOB_LIMIT = 4.2
BLOB_LIMIT_STEP = 0.012
BLOB_LIMIT_MAX = 4.9
# Base64 that decodes to this share of printable text or more is encoded text, not a key.
TEXT_SHARE = 0.9

# Kinds that name a finding only by how it looks, not what it is; a redaction prefers the other.
GENERIC_KINDS = frozenset(
    {"Secret Keyword", "Base64 High Entropy String", "Hex High Entropy String", "Bearer Token"}
)
PRIVATE_KEY = "Private Key"
BASIC_AUTH = "Basic Auth Credentials"
BLOB_KIND = "Base64 High Entropy String"
JWT_KIND = "JSON Web Token"
# IPPublicDetector: an address is no credential. JwtTokenDetector: its pattern ends lazily,
# before the signature; the table's JSON Web Token pattern runs instead, with its check.
EXCLUDED_PLUGINS = frozenset({"IPPublicDetector", "JwtTokenDetector"})

# --- the prefilter ---------------------------------------------------------------------------

# The rarest character of each needle becomes a sentinel byte, and a pattern that starts with
# that byte is scanned at SRE's literal speed. `c` gets a sentinel of its own: it is as common
# as the others together. A needle with none of these characters (`glpat-`, `SG.`, `npm_`)
# counts only right after a quote, the third sentinel: a token in code is a string literal,
# and in a config file it is named (`GITLAB_TOKEN=glpat-…`), which a keyword finds.
_SENTINELS: dict[int, str] = {1: "kwjx/h", 2: "c", 3: "'\"`"}
_QUOTE_SENTINEL = 3
# A letter, digit, `_`, `-` or `/` once mapped (sentinels 1 and 2 stand for letters and `/`).
_TOKEN_BYTE = rb"[\w\x01\x02\-]"
_HEX_BYTE = rb"[0-9a-f\x02]"


def _translation() -> bytes:
    table = bytearray(range(256))
    for upper in range(ord("A"), ord("Z") + 1):
        table[upper] = upper + 32
    for sentinel in _SENTINELS:
        table[sentinel] = 0  # a sentinel byte in the text itself must not look like one
    for sentinel, chars in _SENTINELS.items():
        for char in chars:
            table[ord(char)] = sentinel
            if char.isalpha():
                table[ord(char.upper())] = sentinel
    return bytes(table)


_TABLE = _translation()

# Words that make a secret-looking assignment (lower case): detect-secrets' keyword list
# (api_key, password, passwd, pwd, secret …) widened to token, auth and credential, whose
# values the format and high-entropy detectors judge. `auth` is spelled with what follows it.
KEYWORDS: tuple[str, ...] = (
    "key", "token", "secret", "password", "passwd", "pwd", "credential", "contrase",
    "auth_", "autho", "authe", "autht", "auth=", "auth:", 'auth"', "auth'", "auth ", "auth]",
)  # fmt: skip
# After a keyword: the rest of the name, a closing quote or bracket, an assignment or
# comparison, and a value that starts with MIN_SECRET_CHARS characters other than spaces and
# quotes, quoted in code (detect-secrets' rule); a sentence in quotes is no credential.
_NAME_AND_OPERATOR = rb"[\w\x01\x02]*(?:[\x03\]]{0,2}|\[\d*\])\s*(?::=|[=!:]=?=?|=>|\()\s*@?"
_QUOTED_VALUE = rb"\x03[\w\x01\x02][^\s\x03]{5}"
_ANY_VALUE = rb"\x03?[\w\x01\x02][^\s\x03]{5}"
# `scheme://user:password@`: a superset of BasicAuthDetector's pattern (its excluded
# characters cannot all be told apart once letters and `/` share a sentinel).
_URL_NEEDLE = "://"
_URL_CREDENTIALS = rb"[^\s:@\x03<>]{1,200}:[^\s@\x03<>]{1,200}@"
# After an opening quote: a long base64 string (with a digit, and a letter no hex string
# has), a Mailchimp key (hex-us6), a Telegram bot token (digits:…), a Discord bot token
# (M….….…).
_QUOTED_TOKENS: tuple[bytes, ...] = (
    # Each lookahead stops at the first character that is no token's: no pass over the line.
    rb"(?=[\w+\x01\x02\-]{%d})(?=[a-z_+\x01\x02\-]*\d)(?=[0-9a-f\x02_+\-]*[g-z\x01])"
    rb"[\w+\x01\x02\-]+=*\x03" % MIN_BLOB_CHARS,
    _HEX_BYTE + rb"{32}-us\d",
    rb"\d{8,10}:" + _TOKEN_BYTE + rb"{30}",
    rb"[mno]" + _TOKEN_BYTE + rb"{23,25}\." + _TOKEN_BYTE + rb"{6}\.",
)


# What every token after a quote starts with: 16 characters of a token (with `.` and `:`,
# for SendGrid, Discord and Telegram) or `Bearer `; most strings in code fail it at once.
_QUOTE_GUARD = rb"(?=[\w+\x01\x02\-.:]{16}|bearer\s)"


def _mapped(needle: str) -> bytes:
    return needle.encode().translate(_TABLE)


def _trie(entries: list[tuple[bytes, bytes]]) -> bytes:
    """One alternation for (literal rest, what follows it) pairs, sharing first bytes, so SRE
    tests each byte after a sentinel once instead of once per needle."""
    ends = [follow for rest, follow in entries if not rest]
    groups: dict[bytes, list[tuple[bytes, bytes]]] = {}
    for rest, follow in entries:
        if rest:
            groups.setdefault(rest[:1], []).append((rest[1:], follow))
    alternatives = [re.escape(first) + _trie(group) for first, group in sorted(groups.items())]
    if ends:
        alternatives.append(b"" if b"" in ends else b"(?:" + b"|".join(dict.fromkeys(ends)) + b")")
    if len(alternatives) == 1:
        return alternatives[0]
    return b"(?:" + b"|".join(alternatives) + b")"


def _needles(value: bytes) -> list[tuple[str, bytes]]:
    """(needle, what must follow it on the mapped text) for everything the prefilter passes."""

    def tail(count: int, *, hex_digits: bool) -> bytes:
        return (_HEX_BYTE if hex_digits else _TOKEN_BYTE) + b"{%d}" % count if count else b""

    needles = [(k, _NAME_AND_OPERATOR + value) for k in KEYWORDS]
    needles += [(n, tail(count, hex_digits=hex_digits)) for n, count, hex_digits in LIBRARY_NEEDLES]
    for fmt in TOKEN_FORMATS:
        needles += [(n, tail(fmt.tail, hex_digits=fmt.tail_hex)) for n in fmt.needles]
    needles.append((_URL_NEEDLE, _URL_CREDENTIALS))
    needles += [("'", follow) for follow in _QUOTED_TOKENS]
    # A needle with no anchor character counts right after a quote.
    return [(n if _anchored(n) else "'" + n, follow) for n, follow in needles]


def _anchored(needle: str) -> bool:
    return any(c in chars for chars in _SENTINELS.values() for c in needle.lower())


def _anchor(mapped: bytes) -> int:
    """Where a mapped needle is anchored: at a quote it starts with, else its first byte of
    the earliest sentinel in order."""
    if mapped[:1] == bytes([_QUOTE_SENTINEL]):
        return 0
    for sentinel in _SENTINELS:
        if sentinel in mapped:
            return mapped.index(sentinel)
    raise ValueError(f"the needle {mapped!r} has no anchor character")


def _prefilter(sentinel: int, value: bytes, extra: bytes = b"") -> re.Pattern[bytes] | None:
    """The pattern for the needles anchored at `sentinel`, or None."""
    entries: list[tuple[bytes, bytes]] = []
    for needle, follow in _needles(value):
        mapped = _mapped(needle)
        first = _anchor(mapped)
        if mapped[first] != sentinel:
            continue
        behind = b"(?<=" + re.escape(mapped) + b")" if first else b""
        entries.append((mapped[first + 1 :], behind + follow))
    if not entries:
        return None
    guard = _QUOTE_GUARD if sentinel == _QUOTE_SENTINEL else b""
    return re.compile(re.escape(bytes([sentinel])) + guard + _trie(entries) + extra)


def _prefilters(value: bytes, extra: bytes = b"") -> tuple[re.Pattern[bytes], ...]:
    last = list(_SENTINELS)[-1]
    found = (_prefilter(s, value, extra if s == last else b"") for s in _SENTINELS)
    return tuple(p for p in found if p is not None)


@functools.cache
def _code_prefilters() -> tuple[re.Pattern[bytes], ...]:
    return _prefilters(_QUOTED_VALUE)


@functools.cache
def _config_prefilters() -> tuple[re.Pattern[bytes], ...]:
    # Config files are small and few, so they also get the words without an anchor letter
    # (DB_PASS=, SMTP_PASS:): a pattern with two first bytes leaves SRE's fast path.
    return _prefilters(_ANY_VALUE, b"|pass" + _NAME_AND_OPERATOR + _ANY_VALUE)


# Files whose values need no quotes: detect-secrets' config types, plus env and shell files.
_CONFIG_EXTENSIONS = frozenset(
    {
        ".yaml", ".yml", ".eyaml", ".toml", ".ini", ".cfg", ".conf", ".cnf", ".cf",
        ".properties", ".env", ".sh", ".bash", ".zsh", ".fish", ".go", ".tf", ".tfvars",
        ".hcl", ".npmrc", ".pypirc", ".netrc", ".pgpass", ".htpasswd", ".envrc",
    }
)  # fmt: skip


def _is_config(path: str) -> bool:
    name = os.path.basename(path).lower()
    stem, ext = os.path.splitext(name)
    if not ext or name.startswith(".env") or stem == "dockerfile" or name == "dockerfile":
        return True
    return ext in _CONFIG_EXTENSIONS or (stem.startswith(".") and not ext)


# --- the detectors ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Format:
    """One format pattern: detect-secrets' (a plugin's denylist entry) or the table's."""

    kind: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None  # a further check of the value (JWT: decodes)


@dataclass(frozen=True)
class _Detectors:
    """detect-secrets' plugins and filters and the table's formats, created once and shared
    by the indexing threads (their patterns and checks only read them)."""

    formats: tuple[_Format, ...]
    format_gate: re.Pattern[str] | None  # any format's pattern (None: run them all)
    entropy: tuple[tuple[Any, float], ...]
    keyword_rules: Callable[[str], Any]
    secret_filters: tuple[Callable[[str], bool], ...]
    id_like: Callable[..., bool]
    indirect: Callable[[str], bool]


_detectors: _Detectors | None = None
_detectors_lock = threading.Lock()


def _load() -> _Detectors:
    """The detectors, imported on first use: ~0.08 s, most of it `requests`, which the
    plugins import for checking keys online (coderag never does); a file whose lines pass
    no prefilter never needs them."""
    global _detectors
    with _detectors_lock:
        if _detectors is None:
            _detectors = _build_detectors()
        return _detectors


def warm() -> None:
    """Import and build the detectors now (an indexer starts this beside its reading)."""
    _load()


def _build_detectors() -> _Detectors:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.filters import heuristic
    from detect_secrets.plugins import keyword as keyword_module
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.util.filetype import FileType, determine_file_type

    # Its signature names a TypeVar mypy cannot solve here: these are plugin classes.
    classes = cast("Iterable[type[Any]]", get_mapping_from_secret_type_to_class().values())
    plugins = [
        cls()
        for cls in sorted(classes, key=lambda c: c.__name__)
        if issubclass(cls, RegexBasedDetector) and cls.__name__ not in EXCLUDED_PLUGINS
    ]
    formats = [_Format(p.secret_type, pattern) for p in plugins for pattern in p.denylist]
    jwt_check = cast("Callable[[str], bool]", JwtTokenDetector.is_formally_valid)
    formats += [
        _Format(
            row.kind,
            re.compile(rf"(?<![\w\-])(?:{row.pattern})"),
            jwt_check if row.kind == JWT_KIND else None,
        )
        for row in TOKEN_FORMATS
    ]
    by_type = keyword_module.REGEX_BY_FILETYPE
    config_rules = keyword_module.CONFIG_DENYLIST_REGEX_TO_GROUP
    quoted_rules = keyword_module.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

    def keyword_rules(path: str) -> Any:
        kind = determine_file_type(path)
        if kind is FileType.OTHER and _is_config(path):
            return config_rules
        return by_type.get(kind, quoted_rules)

    return _Detectors(
        formats=tuple(formats),
        format_gate=_gate([f.pattern for f in formats]),
        entropy=(
            (Base64HighEntropyString(limit=BASE64_LIMIT), BASE64_LIMIT),
            (HexHighEntropyString(limit=HEX_LIMIT), HEX_LIMIT),
        ),
        keyword_rules=keyword_rules,
        secret_filters=(
            heuristic.is_sequential_string,
            heuristic.is_potential_uuid,
            heuristic.is_templated_secret,
            heuristic.is_prefixed_with_dollar_sign,
            heuristic.is_not_alphanumeric_string,
        ),
        id_like=heuristic.is_likely_id_string,
        indirect=heuristic.is_indirect_reference,
    )


def _gate(patterns: Sequence[re.Pattern[str]]) -> re.Pattern[str] | None:
    """One pattern that matches where any format's pattern does, so a line none of them
    matches costs one search instead of one per pattern; None if they do not combine."""
    parts = []
    for pattern in patterns:
        flags = "".join(f for f, bit in (("i", re.I), ("x", re.X)) if pattern.flags & bit)
        body = re.sub(r"\(\?P<\w+>", "(?:", pattern.pattern)  # names may repeat across rows
        parts.append(f"(?{flags}:{body})" if flags else f"(?:{body})")
    try:
        return re.compile("|".join(parts))
    except re.error:  # a pattern with a back reference would break numbering: no gate
        return None


# --- scanning --------------------------------------------------------------------------------


def _prefilter_hits(path: str, mapped: bytes) -> Iterator[re.Match[bytes]]:
    for pattern in _config_prefilters() if _is_config(path) else _code_prefilters():
        yield from pattern.finditer(mapped)


def candidate_lines(path: str, raw: bytes) -> list[tuple[int, str]]:
    """The (1-based number, text) of each line of `raw` (a file's UTF-8 text, lone surrogates
    kept) that the prefilter passes on to the detectors, in line order."""
    mapped = raw.translate(_TABLE)
    starts = {mapped.rfind(b"\n", 0, m.start()) + 1 for m in _prefilter_hits(path, mapped)}
    found: list[tuple[int, str]] = []
    line_no, counted_to = 1, 0
    for start in sorted(starts):
        line_no += mapped.count(b"\n", counted_to, start)
        counted_to = start
        end = mapped.find(b"\n", start)
        line = raw[start : end if end >= 0 else len(raw)]
        found.append((line_no, line.decode("utf-8", "surrogatepass")))
    return found


def _windows(path: str, line: str) -> Iterator[tuple[int, str]]:
    """(offset, text) of the parts of a line to scan: the line, or for a long one the
    overlapping windows of it that the prefilter passes."""
    if len(line) <= MAX_SCANNED_LINE:
        yield 0, line
        return
    step = MAX_SCANNED_LINE - WINDOW_OVERLAP
    for offset in range(0, len(line) - WINDOW_OVERLAP, step):
        window = line[offset : offset + MAX_SCANNED_LINE]
        raw = window.encode("utf-8", "surrogatepass").translate(_TABLE)
        if next(_prefilter_hits(path, raw), None) is not None:
            yield offset, window


def scan_text(path: str, text: str, raw: bytes | None = None) -> tuple[SecretFinding, ...]:
    """Every suspected secret in `text` (the file at repository path `path`), in line order.

    `raw` is the text's UTF-8 encoding with lone surrogates kept, when the caller has it
    already (the indexer hashes those bytes).
    """
    if raw is None:
        raw = text.encode("utf-8", "surrogatepass")
    candidates = candidate_lines(path, raw)
    if not candidates:
        return ()
    detectors = _load()
    rules = detectors.keyword_rules(path)
    config = _is_config(path)
    findings: set[SecretFinding] = set()
    for line_no, line in candidates:
        line = line.rstrip("\r")
        for offset, part in _windows(path, line):
            for kind, start, end in _line_secrets(detectors, rules, part, config=config):
                start, end = start + offset, end + offset
                if kind == PRIVATE_KEY:
                    findings.add(_key_block(text, line_no, line, start))
                else:
                    findings.add(SecretFinding(line_no, start, line_no, end, kind))
    return tuple(sorted(findings, key=_finding_order))


# A line that names a credential: only there do high-entropy strings count.
_NAMES_CREDENTIAL = re.compile(r"key|token|secret|passw|pwd|auth|credential|contrase", re.I)
# An unquoted value assigned to a name that names a credential (config files).
_NAMED_VALUE = re.compile(
    r"(?:key|token|secret|passw|pwd|auth|credential|contrase)[\w.\-]*[\]'\"]{0,2}\s*[:=]\s*"
    r"(?P<value>[^\s'\"`,;#]+)",
    re.I,
)
# Random base64 has a run of nine letters of one case in about 1% of 44-character keys.
_LETTER_RUN = re.compile(r"[a-z]{9}|[A-Z]{9}")
_QUOTED_BLOB = re.compile(rf"([\"'`])(?P<value>[A-Za-z0-9+/_\-]{{{MIN_BLOB_CHARS},}}={{0,2}})\1")
# A captured group shorter than this is part of a token's format (GitHub's `ghp`), not the
# secret: the whole match is masked then.
_MIN_GROUP_CHARS = 4
# The characters a token runs on with: a format's match is masked to the end of them.
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")


def _line_secrets(
    detectors: _Detectors, rules: Any, line: str, *, config: bool
) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each secret the detectors find in one line, after the filters."""
    gate = detectors.format_gate
    found = _format_secrets(detectors, line) if gate is None or gate.search(line) else []
    found += _keyword_secrets(detectors, rules, line)
    names_credential = _NAMES_CREDENTIAL.search(line) is not None
    for plugin, limit in detectors.entropy:
        matches = plugin.regex.finditer(line) if names_credential else ()
        for match in matches:
            value = match.group(2)
            if _random(detectors, plugin, limit, value, line):
                found.append((plugin.secret_type, *match.span(2)))
    if config and names_credential:
        for match in _NAMED_VALUE.finditer(line):
            value = match.group("value")
            for plugin, limit in detectors.entropy:
                if set(value) <= set(plugin.charset) and _random(
                    detectors, plugin, limit, value, line
                ):
                    found.append((plugin.secret_type, *match.span("value")))
                    break
    for match in _QUOTED_BLOB.finditer(line):
        if _is_blob(detectors, match.group("value")):
            found.append((BLOB_KIND, *match.span("value")))
    # A value that one detector named needs no second, generic name.
    named: set[tuple[int, int]] = set()
    kept: list[tuple[str, int, int]] = []
    for kind, start, end in found:
        if kind not in GENERIC_KINDS or (start, end) not in named:
            kept.append((kind, start, end))
            named.add((start, end))
    return kept


def _format_secrets(detectors: _Detectors, line: str) -> list[tuple[str, int, int]]:
    """Where the format detectors find a secret: a long captured group of the pattern (the
    password of `://user:password@`, the 40 characters after `aws_secret_access_key =`) or
    else its whole match (a short group, GitHub's `ghp`, is part of the format), held to a
    word boundary and masked to the end of the token it starts."""
    found: list[tuple[str, int, int]] = []
    for fmt in detectors.formats:
        for match in fmt.pattern.finditer(line):
            groups = [i for i in range(1, fmt.pattern.groups + 1) if match.group(i)]
            long_groups = [i for i in groups if len(match.group(i)) >= _MIN_GROUP_CHARS]
            start, end = match.span(long_groups[0]) if long_groups else match.span()
            value = line[start:end]
            if start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
                continue  # a format starts at a word boundary: `ghs_` in `weighs_` is none
            if fmt.check is not None and not fmt.check(value):
                continue
            if not _kept(detectors, value, line, plugin=None):
                continue
            if fmt.kind == BASIC_AUTH and _is_placeholder(value, line[:start]):
                continue
            if value[-1:].isalnum() or value[-1:] in "_-":
                tail = _TOKEN_TAIL.match(line, end)
                end = tail.end() if tail is not None else end
            found.append((fmt.kind, start, end))
    return found


def _keyword_secrets(detectors: _Detectors, rules: Any, line: str) -> list[tuple[str, int, int]]:
    """Values assigned to secret-sounding names (detect-secrets' keyword rules for the file's
    type), each where its rule captured it, unless a filter or `_is_placeholder` drops it."""
    found: list[tuple[str, int, int]] = []
    for regex, group in rules.items():
        for match in regex.finditer(line):
            value = match.group(group)
            start = match.start(group)
            if (
                value
                and len(value) >= MIN_SECRET_CHARS
                and _kept(detectors, value, line, plugin=True)
                and not _is_placeholder(value, line[:start])
            ):
                # The value wherever it stands alone on the line (`user="x", password="x"`),
                # never inside a longer word (`password_field`).
                alone = rf"(?<![\w-]){re.escape(value)}(?![\w-])"
                found += [("Secret Keyword", *m.span()) for m in re.finditer(alone, line)]
                found.append(("Secret Keyword", start, match.end(group)))
    return found


def _random(detectors: _Detectors, plugin: Any, limit: float, value: str, line: str) -> bool:
    """An entropy plugin's verdict on a value: above its limit and past the filters."""
    return plugin.calculate_shannon_entropy(value) > limit and _kept(
        detectors, value, line, plugin=plugin
    )


def _kept(detectors: _Detectors, value: str, line: str, *, plugin: Any) -> bool:
    """detect-secrets' heuristic filters; `plugin` set for the guessing (non-format) ones."""
    if not value:
        return False
    if plugin is not None:
        if len(value) < MIN_SECRET_CHARS:
            return False
        if detectors.indirect(line) or detectors.id_like(value, line, plugin):
            return False
    return not any(check(value) for check in detectors.secret_filters)


def _is_blob(detectors: _Detectors, value: str) -> bool:
    """A quoted base64 string with no keyword near it that is a key: upper case, lower case
    and digits, the entropy of random bytes of its length, and no base64 of text."""
    body = value.rstrip("=")
    if not (any(c.isupper() for c in body) and any(c.islower() for c in body)):
        return False
    if _LETTER_RUN.search(body):
        return False  # a run of letters of one case: an identifier or encoded words
    if not any(c.isdigit() for c in body):
        return False
    plugin = detectors.entropy[0][0]
    limit = min(BLOB_LIMIT + BLOB_LIMIT_STEP * (len(body) - MIN_BLOB_CHARS), BLOB_LIMIT_MAX)
    if plugin.calculate_shannon_entropy(body) < limit:
        return False
    if any(check(body) for check in detectors.secret_filters):
        return False
    return not _decodes_to_text(body)


def _decodes_to_text(body: str) -> bool:
    """Whether a base64 (standard or URL-safe) string decodes to mostly printable text."""
    padded = body + "=" * (-len(body) % 4)
    try:
        data = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return False
    printable = sum(1 for b in data if 32 <= b < 127 or b in (9, 10, 13))
    return bool(data) and printable >= TEXT_SHARE * len(data)


# Values that stand in for a secret (lower case, letters and digits only).
PLACEHOLDERS = frozenset(
    {
        "changeme", "changeit", "changethis", "developmentkey", "devkey", "testkey",
        "secret", "password", "passwd", "dummy", "example", "sample", "placeholder",
        "redacted", "notasecret", "insecure", "default", "none", "null", "undefined",
        "todo", "fixme", "yourkey", "yourtoken", "yoursecret", "yourpassword", "yourapikey",
        "mysecret", "mypassword", "secretkey", "apikey", "token", "test", "testing",
    }
)  # fmt: skip
# A word as a person writes it: lower case, or capitalised, or all upper case.
_WORD = re.compile(r"[a-z]+|[A-Z][a-z]+|[A-Z]+")
_VOWEL = re.compile(r"[aeiouy]", re.I)
_CONSONANTS = re.compile(r"[b-df-hj-np-tv-xz]{5}", re.I)
# Short words: at most this many letters each, at most this many words.
MAX_WORD_LETTERS = 12
MAX_WORDS = 3
# Where words part: anything but a letter or digit, and a lower-case letter before a capital.
_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])")
# The name a value is assigned to: the last identifier before it.
_NAME_BEFORE = re.compile(r"([\w.\-]+)[^\w.\-]*$")


def _is_placeholder(value: str, before: str) -> bool:
    """Whether an assigned value stands in for a secret rather than being one: the name it is
    assigned to (`SECRET = "secret"`), a known placeholder (`changeme`, `xxxx`,
    `your-token-here`), one character repeated, or up to three short words (`development
    key`, `hunter`): a person's word, not a generated key."""
    folded = re.sub(r"[^a-z0-9]", "", value.lower())
    if not folded or len(set(folded)) == 1 or folded in PLACEHOLDERS:
        return True
    if folded.startswith(("your", "my", "some", "dummy", "fake", "example", "test")) and (
        folded.endswith(("here", "key", "token", "secret", "password", "pass", "value"))
    ):
        return True
    name = _NAME_BEFORE.search(before)
    if name is not None and folded in re.sub(r"[^a-z0-9]", "", name.group(1).lower()):
        return True
    words = [w for w in _WORD_BREAK.split(value) if w]
    return 0 < len(words) <= MAX_WORDS and all(_is_word(w) for w in words)


def _is_word(text: str) -> bool:
    """A short word as people write it: letters of one case pattern, a vowel, and no run of
    five consonants (a random string of letters has one)."""
    return (
        0 < len(text) <= MAX_WORD_LETTERS
        and _WORD.fullmatch(text) is not None
        and _VOWEL.search(text) is not None
        and _CONSONANTS.search(text) is None
    )


_KEY_END = re.compile(r"-----END[ A-Z0-9]*-----|---- END SSH2 ENCRYPTED PRIVATE KEY ----")
_KEY_BODY = re.compile(r"^[\s'\"`]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]+: .*|)[\s'\"`,\\n]*$")


def _key_block(text: str, line_no: int, line: str, found_at: int) -> SecretFinding:
    """A private key from its BEGIN line to its END line (or the end of its base64 body)."""
    begin = line.rfind("-----", 0, found_at + 1)
    col = begin if begin >= 0 and line.startswith("-----BEGIN", begin) else found_at
    end_match = _KEY_END.search(line, col)
    if end_match is not None:
        return SecretFinding(line_no, col, line_no, end_match.end(), PRIVATE_KEY)
    lines = _lines_after(text, line_no, MAX_KEY_BLOCK_LINES)
    last_no, last_end = line_no, len(line)
    for offset, following in enumerate(lines, start=1):
        end_match = _KEY_END.search(following)
        if end_match is not None:
            return SecretFinding(line_no, col, line_no + offset, end_match.end(), PRIVATE_KEY)
        if not _KEY_BODY.match(following):
            break
        last_no, last_end = line_no + offset, len(following)
    return SecretFinding(line_no, col, last_no, last_end, PRIVATE_KEY)


def _lines_after(text: str, line_no: int, limit: int) -> list[str]:
    pos = 0
    for _ in range(line_no):
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return []
    return text[pos:].split("\n", limit)[:limit]


def _finding_order(finding: SecretFinding) -> tuple[int, int, int, int, str]:
    return (finding.line, finding.col, finding.end_line, finding.end_col, finding.kind)


# --- using the findings ----------------------------------------------------------------------


def kinds_in(findings: Sequence[SecretFinding], start_line: int, end_line: int) -> tuple[str, ...]:
    """The kinds of the findings that touch lines start_line–end_line, specific ones first."""
    kinds = {f.kind for f in findings if f.line <= end_line and f.end_line >= start_line}
    return tuple(sorted(kinds, key=lambda k: (k in GENERIC_KINDS, k)))


def redact_lines(
    lines: Sequence[str], first_line: int, findings: Sequence[SecretFinding]
) -> list[str]:
    """`lines` (numbered from `first_line`) with each secret replaced by `<redacted:KIND>`.

    Line breaks stay where they were, so line numbers still match the file: a secret over
    several lines (a private key) becomes one marker on its first line and empty lines.
    """
    out = list(lines)
    last_line = first_line + len(out) - 1
    for finding in _merged(findings):
        if finding.end_line < first_line or finding.line > last_line:
            continue
        marker = f"<redacted:{finding.kind}>"
        for number in range(max(finding.line, first_line), min(finding.end_line, last_line) + 1):
            text = out[number - first_line]
            start = finding.col if number == finding.line else 0
            end = finding.end_col if number == finding.end_line else len(text)
            shown = marker if number == finding.line else ""
            out[number - first_line] = text[:start] + shown + text[end:]
    return out


def _merged(findings: Iterable[SecretFinding]) -> list[SecretFinding]:
    """Overlapping findings as one (named by the most specific kind), last in the text first,
    so replacing one never moves the columns of another on the same line."""
    spans: list[SecretFinding] = []
    for f in sorted(findings, key=_finding_order):
        last = spans[-1] if spans else None
        if last is not None and (f.line, f.col) < (last.end_line, last.end_col):
            end = max((last.end_line, last.end_col), (f.end_line, f.end_col))
            kind = (
                last.kind if (last.kind not in GENERIC_KINDS or f.kind in GENERIC_KINDS) else f.kind
            )
            spans[-1] = SecretFinding(last.line, last.col, end[0], end[1], kind)
        else:
            spans.append(f)
    return spans[::-1]

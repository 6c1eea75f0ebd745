"""Provider token formats as data: the ones detect-secrets (1.5) lacks or gets wrong, and the
literal text (needles) that lets the prefilter pass a line to any format detector.

Each row is one format: the kind of finding it makes, its pattern (the whole token; the
scanner puts a word boundary before it, so `ghs_` inside `weighs_` is no GitHub token), the
needles every match holds, and where the format is described. Lengths are ranges where a
provider has changed them or says they may grow; a token that runs on past the pattern is
masked to its end all the same (see `secret_scan`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TokenFormat:
    """One provider's token: a finding of `kind` where `pattern` matches at a word boundary.

    `needles` are literal text (any case) that every match holds, each followed by at least
    `tail` token characters (letters, digits, `_`, `-`; hex digits if `tail_hex`): the
    prefilter passes a line on to the detectors only where one of them is.
    """

    kind: str
    pattern: str
    needles: tuple[str, ...]
    tail: int
    source: str
    tail_hex: bool = False


_URLSAFE = r"[A-Za-z0-9_\-]"

TOKEN_FORMATS: tuple[TokenFormat, ...] = (
    TokenFormat(
        "OpenAI Token",
        rf"sk-(?:proj|svcacct|admin)-{_URLSAFE}{{20,}}",
        ("sk-proj-", "sk-svcacct-", "sk-admin-"),
        20,
        "OpenAI API keys page: project, service account and admin keys (sk-proj-…, "
        "sk-svcacct-…, sk-admin-…)",
    ),
    TokenFormat(
        "Anthropic API Key",
        rf"sk-ant-(?:api|admin)\d\d-{_URLSAFE}{{80,}}",
        ("sk-ant-",),
        80,
        "Anthropic Console API keys: sk-ant-api03-… and admin keys sk-ant-admin01-…, 108 "
        "characters ending in AA",
    ),
    TokenFormat(
        "GitHub Token",
        r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59,}",
        ("github_pat_",),
        82,
        "GitHub docs, fine-grained personal access tokens (github_pat_, 22 + 59 characters)",
    ),
    TokenFormat(
        "NPM tokens",
        r"npm_[A-Za-z0-9]{36}",
        ("npm_",),
        36,
        "npm docs, access tokens: npm_ + 36 characters (granular and classic since 2021)",
    ),
    TokenFormat(
        "Google API Key",
        rf"AIza{_URLSAFE}{{35}}",
        ("aiza",),
        35,
        "Google Cloud docs, API keys: AIza + 35 characters",
    ),
    TokenFormat(
        "Slack Token",
        r"xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,}",
        ("xapp-",),
        6,
        "Slack API docs, app-level tokens: xapp-1-…",
    ),
    TokenFormat(
        "Hugging Face Token",
        r"hf_[A-Za-z]{34}",
        ("hf_",),
        34,
        "Hugging Face docs, user access tokens: hf_ + 34 letters",
    ),
    TokenFormat(
        "DigitalOcean Token",
        r"do[opr]_v1_[a-f0-9]{64}",
        ("dop_v1_", "doo_v1_", "dor_v1_"),
        64,
        "DigitalOcean docs: personal (dop_v1_), OAuth (doo_v1_) and refresh (dor_v1_) tokens",
        tail_hex=True,
    ),
    TokenFormat(
        "Shopify Token",
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        32,
        "Shopify dev docs, access tokens and shared secrets: shpat_/shpca_/shppa_/shpss_ + 32 hex",
        tail_hex=True,
    ),
    TokenFormat(
        "Groq API Key",
        r"gsk_[A-Za-z0-9]{52}",
        ("gsk_",),
        52,
        "GroqCloud console API keys: gsk_ + 52 characters",
    ),
    TokenFormat(
        "JSON Web Token",
        rf"eyJ{_URLSAFE}{{8,}}={{0,2}}\.eyJ{_URLSAFE}{{8,}}={{0,2}}\.{_URLSAFE}*={{0,2}}",
        ("eyjhbgci", "eyj0exai", "eyjrawqi"),  # a header that starts {"alg", {"typ" or {"kid"
        8,
        "RFC 7519: base64url header . payload . signature; both JSON objects start eyJ",
    ),
    TokenFormat(
        "Bearer Token",
        r"Bearer\s+(?P<secret>[A-Za-z0-9_\-.~+/]{20,}=*)",
        ("bearer ", "authorization: bearer "),
        20,
        "RFC 6750, the Authorization: Bearer header",
    ),
)

# What every match of detect-secrets' own format detectors holds (lower case), each with the
# token characters that follow it at least and whether they are hex digits; a needle that
# starts with a quote counts only right after one.
LIBRARY_NEEDLES: tuple[tuple[str, int, bool], ...] = (
    ("akia", 16, False), ("asia", 16, False), ("abia", 16, False), ("acca", 16, False),
    ("a3t", 17, False),  # AWS key IDs
    ("accountkey=", 0, False),  # Azure storage
    ("ghp_", 36, False), ("gho_", 36, False), ("ghu_", 36, False), ("ghs_", 36, False),
    ("ghr_", 36, False),  # GitHub
    ("glpat-", 20, False), ("gldt-", 20, False), ("glft-", 20, False), ("glsoat-", 20, False),
    ("glrt-", 20, False), ("glcbt-", 20, False), ("glimt-", 25, False), ("glptt-", 40, False),
    ("glagent-", 50, False), ("gloas-", 64, False), ("gr1348941", 20, False),  # GitLab
    ("sg.", 22, False),  # SendGrid
    ("_authtoken=", 0, False),  # npm in .npmrc
    ("t3blbkfj", 20, False),  # OpenAI ("OpenAI" in base64)
    ("private key", 0, False), ("putty-user-key-file", 0, False),
    ("ssh2 encrypted", 0, False),  # private keys
    ("pypi-ageichlwas5vcmc", 0, False), ("pypi-agendgvzdc5wexbplm9yzw", 0, False),  # PyPI
    ("xoxa-", 1, False), ("xoxb-", 1, False), ("xoxo-", 1, False), ("xoxp-", 1, False),
    ("xoxr-", 1, False), ("xoxs-", 1, False), ("hooks.slack.com/services/", 0, False),  # Slack
    ("sk_live_", 24, False), ("rk_live_", 24, False),  # Stripe
    ("sq0csp-", 43, False),  # Square
    ("'sk", 32, True), ("'ac", 32, True),  # Twilio, in a string (short needles are common)
)  # fmt: skip

"""The secret scan: detect-secrets' detectors behind our prefilter, on real text (no mocks)."""

from __future__ import annotations

import pytest

from coderag_tui.core.index.secret_scan import (
    candidate_lines,
    kinds_in,
    redact_lines,
    scan_text,
)
from coderag_tui.core.records import SecretFinding
from tests.fixtures.secrets_repo import (
    AWS_KEY_ID,
    AWS_SECRET,
    DB_PASSWORD,
    ENV,
    GITHUB_TOKEN,
    ID_RSA,
    SETTINGS_PY,
    STRIPE_KEY,
)

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)


def found(path: str, text: str) -> dict[str, set[str]]:
    """What the scan finds, as {secret text: kinds}."""
    lines = text.split("\n")
    out: dict[str, set[str]] = {}
    for f in scan_text(path, text):
        if f.line == f.end_line:
            value = lines[f.line - 1][f.col : f.end_col]
        else:
            value = "\n".join([lines[f.line - 1][f.col :], *lines[f.line : f.end_line]])
        out.setdefault(value, set()).add(f.kind)
    return out


def test_the_reproduction_settings_module_has_every_value_found_with_its_kind() -> None:
    hits = found("settings.py", SETTINGS_PY)
    assert "AWS Access Key" in hits[AWS_KEY_ID]
    assert "AWS Access Key" in hits[AWS_SECRET]
    assert "Stripe Access Key" in hits[STRIPE_KEY]
    assert hits[GITHUB_TOKEN] == {"GitHub Token"}  # the whole token, not just its `ghp` prefix
    assert hits[DB_PASSWORD] == {"Basic Auth Credentials"}  # only the password of the URL


def test_an_env_file_is_read_as_config_where_values_need_no_quotes() -> None:
    hits = found(".env", ENV)
    assert hits[AWS_KEY_ID] == {"AWS Access Key"}
    assert hits[AWS_SECRET] == {"Secret Keyword"}
    assert hits[DB_PASSWORD] == {"Basic Auth Credentials"}


def test_a_private_key_is_one_finding_from_begin_to_end() -> None:
    (finding,) = scan_text("id_rsa", ID_RSA)
    end = len("-----END OPENSSH PRIVATE KEY-----")
    assert finding == SecretFinding(1, 0, 4, end, "Private Key")


def test_a_private_key_inside_code_starts_at_its_header() -> None:
    text = f'KEY = """{ID_RSA}"""\nprint(KEY)\n'
    (finding,) = scan_text("keys.py", text)
    assert (finding.line, finding.col, finding.end_line) == (1, len('KEY = """'), 4)
    assert kinds_in([finding], 5, 6) == ()


@pytest.mark.parametrize(
    ("path", "line", "value", "kind"),
    [
        ("ci.yml", "token: gho_16C7e42F292c6912E7710c838347Ae178B4a", None, "GitHub Token"),
        ("run.sh", "curl -H 'x: ghs_16C7e42F292c6912E7710c838347Ae178B4a'", None, "GitHub Token"),
        ("pay.js", "const k = 'rk_live_4eC39HqLyjWDarjtT1zdp7dc';", None, "Stripe Access Key"),
        (
            "bot.py",
            "SLACK = 'xoxb-123456789012-1234567890123-abcdefghijklmnop'",
            None,
            "Slack Token",
        ),
        ("auth.py", f"HEADER = 'Bearer {JWT}'", JWT, "JSON Web Token"),
        (
            ".npmrc",
            "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
            None,
            "NPM tokens",
        ),
        ("db.cfg", "password = correcthorse9", "correcthorse9", "Secret Keyword"),
        ("app.py", 'client_secret = "q8Zr2LmX0pWv7Ty1"', "q8Zr2LmX0pWv7Ty1", "Secret Keyword"),
        (
            "app.py",
            'API_TOKEN = "9f2a71c3e8b54d06a1b2c3d4e5f60718"',
            None,
            "Hex High Entropy String",
        ),
        (
            "dsn.py",
            "DSN = 'mysql://root:s3cr3tpw@localhost/app'",
            "s3cr3tpw",
            "Basic Auth Credentials",
        ),
    ],
)
def test_each_kind_passes_the_prefilter_and_is_found(
    path: str, line: str, value: str | None, kind: str
) -> None:
    assert candidate_lines(path, line.encode()) == [(1, line)]
    findings = scan_text(path, f"# before\n{line}\n# after\n")
    assert kind in {f.kind for f in findings}
    assert all(f.line == 2 for f in findings)
    if value is not None:
        masked = redact_lines(["# before", line, "# after"], 1, findings)
        assert value not in "\n".join(masked)


@pytest.mark.parametrize(
    "line",
    [
        "key = self._key(name)",
        "def check(password: str) -> bool:",
        "token = next(tokens)",
        'DIGEST = "d41d8cd98f00b204e9800998ecf8427e"',  # high entropy, but named as no secret
        'secret = os.environ["APP_SECRET"]',
        'password = "${DB_PASSWORD}"',
        "url = 'https://docs.python.org/3/library/secrets.html'",
        'private_key_path = "/etc/ssl/private/server.pem"',
    ],
)
def test_ordinary_code_is_not_a_secret(line: str) -> None:
    assert scan_text("code.py", f"{line}\n") == ()


def test_line_numbers_count_every_line_before_the_finding() -> None:
    text = "\n".join(["x = 1"] * 40 + [f'TOKEN = "{GITHUB_TOKEN}"'] + ["y = 2"] * 5)
    (finding,) = scan_text("many.py", text)
    assert finding.line == 41


def test_non_ascii_text_keeps_character_columns() -> None:
    line = f'naïve = "héllo"; GITHUB = "{GITHUB_TOKEN}"'
    (finding,) = scan_text("utf8.py", f"# é\n{line}\n")
    assert line[finding.col : finding.end_col] == GITHUB_TOKEN


def test_redaction_keeps_lines_and_the_text_around_each_secret() -> None:
    lines = SETTINGS_PY.split("\n")
    masked = redact_lines(lines, 1, scan_text("settings.py", SETTINGS_PY))
    assert len(masked) == len(lines)
    assert masked[4] == 'AWS_ACCESS_KEY_ID = "<redacted:AWS Access Key>"'
    assert masked[7] == 'GITHUB_TOKEN = "<redacted:GitHub Token>"'
    assert "postgres://admin:<redacted:Basic Auth Credentials>@db.example.com/prod" in masked[3]
    assert masked[8] == "DEBUG = False"


def test_redaction_of_a_key_block_leaves_one_marker_and_blank_lines() -> None:
    lines = ID_RSA.split("\n")
    masked = redact_lines(lines, 1, scan_text("id_rsa", ID_RSA))
    assert masked == ["<redacted:Private Key>", "", "", "", ""]


def test_redaction_of_a_window_masks_the_part_of_a_key_inside_it() -> None:
    findings = scan_text("id_rsa", ID_RSA)
    window = ID_RSA.split("\n")[1:3]  # lines 2-3: the key's body only
    assert redact_lines(window, 2, findings) == ["", ""]


def test_kinds_in_a_line_range_name_specific_kinds_first() -> None:
    findings = scan_text("settings.py", SETTINGS_PY)
    assert kinds_in(findings, 1, 3) == ()
    assert kinds_in(findings, 6, 7) == ("AWS Access Key", "Stripe Access Key", "Secret Keyword")

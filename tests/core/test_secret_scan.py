"""The secret scan: detect-secrets' detectors and our formats behind our prefilter, on real text
(no mocks)."""

from __future__ import annotations

import pytest

from coderag_tui.core.index.secret_scan import (
    MAX_SCANNED_LINE,
    WINDOW_OVERLAP,
    candidate_lines,
    kinds_in,
    redact_lines,
    scan_text,
)
from coderag_tui.core.records import SecretFinding
from tests.fixtures.secret_formats import FORMATS, NOT_SECRETS, Case, cases
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
    # `STRIPE_API_KEY = "sk_live_…"`: the format names the value, no generic kind beside it.
    assert kinds_in(findings, 6, 7) == ("AWS Access Key", "Stripe Access Key")
    in_env = scan_text(".env", ENV)
    assert kinds_in(in_env, 1, 3) == ("AWS Access Key", "Basic Auth Credentials", "Secret Keyword")


# --- issue 21, item 5: the keys developers hold, long lines, whole redaction --------------------


def _covered(case: Case) -> bool:
    """Whether the findings in the case's text cover its key whole."""
    lines = case.text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    covered: set[int] = set()
    for f in scan_text(case.path, case.text):
        covered.update(range(starts[f.line - 1] + f.col, starts[f.end_line - 1] + f.end_col))
    span = range(case.start, case.start + len(case.key))
    return all(i in covered for i in span if case.text[i] != "\n")


def _format_of(case: Case) -> str:
    return case.format


@pytest.mark.parametrize("case", [c for c in cases() if c.context == "bare"], ids=_format_of)
def test_every_provider_format_is_found_whole_with_no_keyword_near_it(case: Case) -> None:
    assert _covered(case), case.text


# A password of 16 letters and digits named SERVICE_CREDENTIAL has too little entropy to tell
# from an identifier; named `password` it is found (see the keyword tests above).
@pytest.mark.parametrize(
    "case",
    [c for c in cases() if c.context == "named" and c.format != "Password in a URL"],
    ids=_format_of,
)
def test_every_provider_format_is_found_whole_as_a_config_value(case: Case) -> None:
    assert _covered(case), case.text


def test_the_fixture_has_25_formats_or_more() -> None:
    assert len(FORMATS) >= 25


def test_a_key_pair_on_a_line_longer_than_the_scanned_limit_is_found() -> None:
    padding = "x" * (MAX_SCANNED_LINE * 2)
    line = f'data = ["{padding}", "{AWS_KEY_ID}", "{padding}", "{GITHUB_TOKEN}"]'
    hits = found("bundle.py", f"{line}\n")
    assert hits[AWS_KEY_ID] == {"AWS Access Key"}
    assert hits[GITHUB_TOKEN] == {"GitHub Token"}


def test_a_token_across_a_window_boundary_is_found_whole() -> None:
    step = MAX_SCANNED_LINE - WINDOW_OVERLAP
    line = "y" * (step - 10) + f' "{GITHUB_TOKEN}" ' + "z" * MAX_SCANNED_LINE
    (finding,) = scan_text("long.js", f"{line}\n")
    assert line[finding.col : finding.end_col] == GITHUB_TOKEN


def test_redaction_masks_a_json_web_token_with_its_signature() -> None:
    line = f"HEADER = 'Bearer {JWT}'"
    masked = redact_lines([line], 1, scan_text("auth.py", line))
    signature = JWT.rsplit(".", 1)[1]
    assert signature not in masked[0]
    assert masked[0] == "HEADER = 'Bearer <redacted:JSON Web Token>'"


def test_redaction_masks_the_whole_token_and_the_value_where_it_stands() -> None:
    key = next(c.key for c in cases() if c.format == "OpenAI project key")
    lines = [
        f'client = OpenAI("{key}")',
        'db.connect(user="Xq9v2mZp7", password="Xq9v2mZp7", password_file=PATH)',
    ]
    masked = redact_lines(lines, 1, scan_text("llm.py", "\n".join(lines)))
    assert masked == [
        'client = OpenAI("<redacted:OpenAI Token>")',
        'db.connect(user="<redacted:Secret Keyword>", password="<redacted:Secret Keyword>", '
        "password_file=PATH)",
    ]


def test_redaction_masks_a_key_with_no_keyword_in_the_same_chunk() -> None:
    blob = next(c.key for c in cases() if c.format == "Base64 key with no keyword")
    lines = ['DB_PASSWORD = "s3cr3t-Xq9"', f'fernet = Fernet(b"{blob}")']
    masked = redact_lines(lines, 1, scan_text("crypto.py", "\n".join(lines)))
    assert blob not in "\n".join(masked)
    assert masked[1] == 'fernet = Fernet(b"<redacted:Base64 High Entropy String>")'


# --- issue 21, item 6: ordinary code is no secret -------------------------------------------


@pytest.mark.parametrize(("path", "text"), NOT_SECRETS)
def test_placeholders_and_words_that_hold_a_prefix_are_not_secrets(path: str, text: str) -> None:
    assert scan_text(path, f"{text}\n") == ()


def test_a_token_prefix_counts_at_a_word_boundary_only() -> None:
    body = GITHUB_TOKEN[4:]
    assert scan_text("t.py", f"def test_weighs_{body}(): ...\n") == ()
    assert found("t.py", f'token = "ghs_{body}"\n') == {f"ghs_{body}": {"GitHub Token"}}


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ('password = "hunter2"', "hunter2"),  # a word and a digit: a person's password
        ('SECRET_KEY = "q8Zr2LmX0pWv7Ty1"', "q8Zr2LmX0pWv7Ty1"),
        ('password = "correcthorsebatterystaple"', "correcthorsebatterystaple"),
        ('api_key = "kjqzxwvbnmrt"', "kjqzxwvbnmrt"),  # letters, but no word
    ],
)
def test_values_that_are_no_placeholder_are_still_found(line: str, value: str) -> None:
    assert value in found("app.py", f"{line}\n")

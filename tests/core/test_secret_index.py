"""Secrets at index time: key files skipped at the walk, findings stored per file, and only
changed files scanned again (real repositories in tmp_path, the real detect-secrets)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coderag_tui.core.index import secret_scan
from coderag_tui.core.index.indexer import build_index
from coderag_tui.core.index.store import Store
from coderag_tui.core.index.walk import _longest_line_chars, secret_file_kind, walk
from coderag_tui.core.records import SkipReason
from coderag_tui.settings import Settings
from tests.fixtures.secrets_repo import GITHUB_TOKEN, SETTINGS_PY, make_secrets_repo


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("id_rsa", True), ("id_ed25519", True), ("id_rsa.pub", False), ("server.pem", True),
        ("tls.key", True), ("store.p12", True), ("cert.pfx", True), ("release.keystore", True),
        (".env", True), (".env.local", True), (".env.production", True), ("prod.env", True),
        (".env.example", False), (".env.sample", False), (".env.template", False),
        (".netrc", True), (".pgpass", True), ("credentials.json", True), ("settings.py", False),
        ("keys.py", False), ("environment.py", False), ("monkey.txt", False),
    ],
)  # fmt: skip
def test_secret_file_names(name: str, secret: bool) -> None:
    assert (secret_file_kind(name) is not None) is secret


@pytest.mark.parametrize("git", [True, False])
def test_key_files_are_skipped_with_a_reason_unless_included(tmp_path: Path, git: bool) -> None:
    root = make_secrets_repo(tmp_path / "repo", git=git)
    (root / "certs").mkdir()
    (root / "certs" / "server.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (root / ".env.example").write_text("AWS_SECRET_ACCESS_KEY=\n")
    result = walk(root)
    skipped = {s.path: s for s in result.skipped}
    for path in (".env", "id_rsa", "certs/server.pem"):
        assert skipped[path].reason is SkipReason.SECRET_FILE
        assert "--include-secret-files" in skipped[path].detail
    assert {f.path for f in result.files} == {".env.example", "app/db.py", "settings.py"}
    included = walk(root, include_secret_files=True)
    assert not included.skipped
    assert {".env", "id_rsa", "certs/server.pem"} <= {f.path for f in included.files}


def _settings(root: Path, tmp_path: Path, **extra: Any) -> Settings:
    return Settings(repo=root, index_dir=tmp_path / "index", **extra)


def test_findings_are_stored_per_file_and_only_changed_files_are_scanned(tmp_path: Path) -> None:
    root = make_secrets_repo(tmp_path / "repo")
    settings = _settings(root, tmp_path, include_secret_files=True)
    with Store.open(settings.index_path) as store:
        first = build_index(settings, store)
        assert first.files_scanned == first.files_read == 4
        assert dict(first.secrets)["id_rsa"] == ("Private Key",)
        assert set(store.secrets()) == {".env", "id_rsa", "settings.py"}

        again = build_index(settings, store)  # nothing changed: nothing read, nothing scanned
        assert (again.files_read, again.files_scanned) == (0, 0)

        db = root / "app" / "db.py"
        os.utime(db, ns=(db.stat().st_atime_ns, db.stat().st_mtime_ns + 10**9))
        touched = build_index(settings, store)  # read again, same text: no scan
        assert (touched.files_read, touched.files_scanned) == (1, 0)

        cleaned = SETTINGS_PY.replace(GITHUB_TOKEN, "read from the environment")
        (root / "settings.py").write_text(cleaned)
        edited = build_index(settings, store)
        assert (edited.files_read, edited.files_scanned) == (1, 1)
        kinds = {f.kind for f in store.secrets()["settings.py"]}
        assert "GitHub Token" not in kinds and "Stripe Access Key" in kinds

        (root / "id_rsa").unlink()
        build_index(settings, store)
        assert "id_rsa" not in store.secrets()


def test_turning_secret_files_off_again_drops_them_and_their_findings(tmp_path: Path) -> None:
    root = make_secrets_repo(tmp_path / "repo")
    with Store.open(_settings(root, tmp_path).index_path) as store:
        build_index(_settings(root, tmp_path, include_secret_files=True), store)
        report = build_index(_settings(root, tmp_path), store)
        assert report.files_removed == 2
        assert set(store.secrets()) == {"settings.py"}


def test_a_new_scanner_version_rescans_stored_texts_without_reading_files(
    tmp_path: Path,
) -> None:
    root = make_secrets_repo(tmp_path / "repo")
    settings = _settings(root, tmp_path)
    with Store.open(settings.index_path) as store:
        build_index(settings, store)
        before = store.secrets()
        with store.batch():
            store.put_secrets([("settings.py", ())])  # as an older scanner might have left it
            store.set_meta(secret_scan.SCANNER_META_KEY, "0")
        report = build_index(settings, store)
        assert report.files_read == 0
        assert report.files_scanned == 2  # settings.py and app/db.py, from the stored text
        assert store.secrets() == before
        assert store.get_meta(secret_scan.SCANNER_META_KEY) == secret_scan.SCANNER_VERSION


def _longest_reference(data: bytes, limit: int) -> int:
    if len(data) <= limit:
        return 0
    longest = [line for line in data.split(b"\n") if len(line) > limit]
    if not longest:
        return 0
    return max(len(line.decode("utf-8", errors="replace").rstrip("\r")) for line in longest)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=60), min_size=0, max_size=40),
    st.integers(min_value=1, max_value=50),
)
def test_the_fast_longest_line_check_agrees_with_splitting(lengths: list[int], limit: int) -> None:
    data = b"\n".join(b"x" * n for n in lengths)
    assert _longest_line_chars(data, limit) == _longest_reference(data, limit)

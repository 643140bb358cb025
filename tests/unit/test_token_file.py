"""The operator token file: a damaged one refuses every token (and says which file), never lets
one through; a new token is on disk before the file is replaced."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from events.stores.faults import StorageDamaged
from service.web.auth import TokenStore
from tests.servers import run_cli


def test_a_created_token_checks_and_the_file_is_private(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    token = store.create("ops")
    assert store.check(token) == "ops"
    assert store.check(token + "x") is None
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("text", ["", "{", "[]", '{"a": 1}', "\x00\x00"])
def test_a_damaged_token_file_refuses_every_token_naming_the_file(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "tokens.json"
    store = TokenStore(path)
    token = store.create("ops")
    path.write_text(text)
    with pytest.raises(StorageDamaged, match=r"tokens\.json is not a token file"):
        store.check(token)
    with pytest.raises(StorageDamaged):
        store.create("another")
    assert path.read_text() == text  # left as found, for the operator to restore


def test_token_create_on_a_damaged_file_is_one_line_and_exit_4(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli("init", "--data", data).returncode == 0
    (data / "tokens.json").write_text("{")
    done = run_cli("token", "create", "ops", "--data", data)
    assert done.returncode == 4, done.stderr
    assert done.stderr.count("\n") == 1 and "tokens.json is not a token file" in done.stderr


def test_an_operator_route_on_a_damaged_token_file_is_503_and_appends_nothing(
    tmp_path: Path,
) -> None:
    from litestar.testing import TestClient

    from service.core.config import Settings
    from service.core.init import init_data_dir
    from service.web.app import create_app

    ledger, _ = init_data_dir(tmp_path / "data")
    token = TokenStore(tmp_path / "data" / "tokens.json").create("ops")
    (tmp_path / "data" / "tokens.json").write_text("[]")
    before = ledger.store.size
    try:
        with TestClient(app=create_app(Settings(data=tmp_path / "data"), ledger=ledger)) as http:
            answer = http.post(
                "/v1/ingest/manifest", content=b"{}", headers={"authorization": f"Bearer {token}"}
            )
        assert answer.status_code == 503, answer.text
        assert answer.json()["type"].endswith("/storage-damaged")
        assert "tokens.json" not in answer.text  # no server path to the client
        assert ledger.store.refresh() == before
    finally:
        ledger.close()

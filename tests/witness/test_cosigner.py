"""The log asks its witnesses: a real log (SQLite) and real witness processes on loopback.
Checkpoints get cosigned as the log grows, a witness restarted or down catches up, and a
witness fed a fork refuses it, loudly, while the log goes on."""

from __future__ import annotations

import shutil
from pathlib import Path

from keys.cosignatures import cosignatures, parse_witness_vkey
from service.core.init import init_data_dir
from service.core.witnesses import Cosigner, add_witness, configured, remove_witness
from tests.builders import bundle, ingest_event
from tests.servers import run_cli
from tests.witness.test_http import witness_served


def _witness(tmp_path: Path, n: int, log_vkey: Path) -> Path:
    folder = tmp_path / f"w{n}"
    assert (
        run_cli("witness", "init", "--data", folder, "--name", f"witness.test/w{n}").returncode == 0
    )
    assert run_cli("witness", "add-log", log_vkey, "--data", folder).returncode == 0
    return folder


def _reconfigure(data: Path, folders: list[Path], urls: list[str]) -> None:
    for folder, url in zip(folders, urls, strict=True):
        vkey = (folder / "witness.vkey").read_text()
        remove_witness(data, parse_witness_vkey(vkey).name)
        add_witness(data, url, vkey)


def _grow(ledger, n: int, group: int) -> None:  # type: ignore[no-untyped-def]
    for author in range(n):
        parts = bundle(group=group, author=author, value=10 + author)
        ledger.append([(ingest_event(parts), parts["run"].digest)])


def test_the_log_is_cosigned_as_it_grows_and_a_fork_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "log"
    ledger, _ = init_data_dir(data)
    (tmp_path / "log.vkey").write_text(ledger.log_verifier.vkey + "\n")
    folders = [_witness(tmp_path, n, tmp_path / "log.vkey") for n in (1, 2)]
    verifiers = [parse_witness_vkey((f / "witness.vkey").read_text()) for f in folders]
    with ledger, witness_served(folders[0]) as url1, witness_served(folders[1]) as url2:
        for url, folder in ((url1, folders[0]), (url2, folders[1])):
            add_witness(data, url, (folder / "witness.vkey").read_text())
        assert [w.url for w in configured(data)] == [url1, url2]
        _grow(ledger, 2, group=1)
        cosigner = Cosigner(ledger.store, data)
        assert set(cosigner.round().values()) == {"cosigned"}
        _grow(ledger, 3, group=2)
        assert set(cosigner.round().values()) == {"cosigned"}
        latest = ledger.store.latest_checkpoint()
        found = cosignatures(latest.note, verifiers)
        assert set(found) == {"witness.test/w1", "witness.test/w2"}
        assert set(cosigner.round().values()) == {"current"}
        # A new log process knows nothing of the witnesses' sizes: it learns them (409).
        _grow(ledger, 1, group=3)
        assert set(Cosigner(ledger.store, data).round().values()) == {"cosigned"}
        size = ledger.store.size
    # The fork: a copy of the data directory (same keys) that appends something else.
    fork = tmp_path / "fork"
    shutil.copytree(data, fork)
    from service.core.ledger import Ledger

    with Ledger.open(data) as true_log, Ledger.open(fork) as forked:
        _grow(true_log, 1, group=4)
        _grow(forked, 1, group=5)
        assert true_log.store.size == forked.store.size == size + 1
        with witness_served(folders[0]) as url1, witness_served(folders[1]) as url2:
            for d in (data, fork):  # restarted on other ports
                _reconfigure(d, folders, [url1, url2])
            assert set(Cosigner(true_log.store, data).round().values()) == {"cosigned"}
            refused = Cosigner(forked.store, fork).round()
            assert all(v.startswith("refused") for v in refused.values()), refused
            assert "refusal" in (fork / "witness-status.json").read_text()
            # The fork's checkpoint holds no cosignature; the log goes on writing.
            note = forked.store.latest_checkpoint().note
            assert cosignatures(note, verifiers) == {}
            _grow(forked, 1, group=6)
    # The log page shows it (the witnesses are down now: a restart keeps what was refused).
    fork_page, true_page = _log_page(fork), _log_page(data)
    assert 'role="alert"' in fork_page and fork_page.count("<strong>refused:</strong>") == 2
    assert "A witness refused this log" in fork_page
    assert "refused" not in true_page and true_page.count(f"cosigned tree size {size + 1:,}") == 2
    assert remove_witness(data, "witness.test/w1").url == url1
    assert [w.url for w in configured(data)] == [url2]


def _log_page(data: Path) -> str:
    """``/log`` of the log at ``data``, served in process (its cosigner thread included)."""
    from litestar.testing import TestClient

    from service.core.config import Settings
    from service.core.ledger import Ledger
    from service.web.app import create_app

    with (
        Ledger.open(data) as ledger,
        TestClient(create_app(Settings(data=data), ledger=ledger)) as c,
    ):
        answer = c.get("/log")
        assert answer.status_code == 200, answer.text
        return answer.text


def test_a_witness_down_is_caught_up_when_it_is_back(tmp_path: Path) -> None:
    data = tmp_path / "log"
    ledger, _ = init_data_dir(data)
    (tmp_path / "log.vkey").write_text(ledger.log_verifier.vkey + "\n")
    folder = _witness(tmp_path, 1, tmp_path / "log.vkey")
    with ledger:
        with witness_served(folder) as url:
            add_witness(data, url, (folder / "witness.vkey").read_text())
            _grow(ledger, 1, group=1)
            cosigner = Cosigner(ledger.store, data, timeout=2)
            assert cosigner.round() == {"witness.test/w1": "cosigned"}
        _grow(ledger, 2, group=2)  # the witness is down: writes go on
        assert cosigner.round()["witness.test/w1"].startswith("unreachable")
        # Back on another port: the log is configured anew and catches it up from its size.
        with witness_served(folder) as url:
            remove_witness(data, "witness.test/w1")
            add_witness(data, url, (folder / "witness.vkey").read_text())
            assert cosigner.round() == {"witness.test/w1": "cosigned"}

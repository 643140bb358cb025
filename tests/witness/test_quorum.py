"""Readers that count witnesses (issue 29, Deliver 2 and 3), through the console script: the
``witnesses`` configuration commands, and ``verify-citation`` and ``audit`` with
``--witness-key --quorum`` on a receipt (and a log) whose checkpoint real witnesses cosigned,
with a stranger's key, a forged line, too few witnesses and bad options."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from service.app.cite import citation_receipt
from service.core.init import init_data_dir
from service.core.witnesses import Cosigner
from tests.servers import run_cli, served
from tests.witness.test_cosigner import _grow, _witness
from tests.witness.test_http import witness_served


def test_witnesses_are_added_listed_and_removed_from_the_command_line(tmp_path: Path) -> None:
    data = tmp_path / "log"
    ledger, _ = init_data_dir(data)
    ledger.close()
    (tmp_path / "log.vkey").write_text(ledger.log_verifier.vkey + "\n")
    w1 = _witness(tmp_path, 1, tmp_path / "log.vkey")
    vkey = w1 / "witness.vkey"
    added = run_cli("witnesses", "add", "http://127.0.0.1:9/", vkey, "--data", data)
    assert added.returncode == 0, added.stderr
    assert "witness.test/w1" in added.stdout
    again = run_cli("witnesses", "add", "http://127.0.0.1:9", vkey, "--data", data)
    assert again.returncode == 2 and "already configured" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    bad = run_cli("witnesses", "add", "ftp://x", vkey, "--data", data)
    assert bad.returncode == 2 and "http" in bad.stderr
    listed = json.loads(run_cli("witnesses", "list", "--json", "--data", data).stdout)
    assert [w["name"] for w in listed["witnesses"]] == ["witness.test/w1"]
    assert listed["witnesses"][0]["url"] == "http://127.0.0.1:9"
    assert "not asked yet" in run_cli("witnesses", "list", "--data", data).stdout
    gone = run_cli("witnesses", "remove", "witness.test/w1", "--data", data)
    assert gone.returncode == 0 and "no longer asking" in gone.stdout
    assert run_cli("witnesses", "remove", "witness.test/w1", "--data", data).returncode == 2
    nowhere = run_cli("witnesses", "list", "--data", tmp_path / "absent")
    assert nowhere.returncode != 0 and "data directory" in nowhere.stderr


def test_a_receipt_verifies_with_a_quorum_of_the_witnesses_that_cosigned_it(
    tmp_path: Path,
) -> None:
    data = tmp_path / "log"
    ledger, _ = init_data_dir(data)
    log_vkey = tmp_path / "log.vkey"
    log_vkey.write_text(ledger.log_verifier.vkey + "\n")
    folders = [_witness(tmp_path, n, log_vkey) for n in (1, 2, 3)]
    keys = [f / "witness.vkey" for f in folders]
    with ledger, witness_served(folders[0]) as url1, witness_served(folders[1]) as url2:
        from service.core.witnesses import add_witness

        add_witness(data, url1, keys[0].read_text())
        add_witness(data, url2, keys[1].read_text())
        _grow(ledger, 2, group=1)
        assert set(Cosigner(ledger.store, data).round().values()) == {"cosigned"}
        digest = ledger.store.session.execute("SELECT min(run_digest) FROM p_runs").fetchone()[0]
        store = ledger.store
        receipt = citation_receipt(ledger, store.session, store, digest, base="https://b.example")
    path = tmp_path / "receipt"
    path.write_bytes(receipt)

    def verify(*options: object, file: Path = path) -> tuple[int, str]:
        done = run_cli("verify-citation", file, "--log-key", log_vkey, *options)
        return done.returncode, done.stdout + done.stderr

    code, said = verify()
    assert code == 0 and "2 cosignature line(s)" in said, said
    code, said = verify("--witness-key", keys[0], "--witness-key", keys[1], "--quorum", "2")
    assert code == 0 and "2 of the 2 witness(es)" in said, said
    # A witness that never cosigned it: refused, naming it.
    code, said = verify("--witness-key", keys[2], "--quorum", "1")
    assert code == 1 and "witnesses:" in said and "witness.test/w3" in said, said
    code, said = verify("--witness-key", keys[0], "--witness-key", keys[2])  # default: all
    assert code == 1 and "witness.test/w3" in said, said
    code, said = verify("--witness-key", keys[0], "--witness-key", keys[2], "--quorum", "1")
    assert code == 0, said
    # Bad options: a quorum above the keys given, or without any; a file that is no vkey.
    assert verify("--witness-key", keys[0], "--quorum", "2")[0] == 2
    assert verify("--quorum", "1")[0] == 2
    assert verify("--witness-key", log_vkey)[0] == 2
    # A cosignature of a witness given that does not verify is refused, never counted.
    lines = receipt.decode().split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("checkpoint "))
    note = base64.b64decode(lines[at].split(" ", 1)[1]).decode()
    body, _, sigs = note.rpartition("\n\n")
    forged_sigs = []
    for line in sigs.splitlines():
        if line.startswith("\u2014 witness.test/w1 "):
            raw = bytearray(base64.b64decode(line.split(" ")[2]))
            raw[-1] ^= 1
            line = "\u2014 witness.test/w1 " + base64.b64encode(bytes(raw)).decode()
        forged_sigs.append(line)
    lines[at] = (
        "checkpoint "
        + base64.b64encode((body + "\n\n" + "\n".join(forged_sigs) + "\n").encode()).decode()
    )
    forged = tmp_path / "forged"
    forged.write_text("\n".join(lines))
    code, said = verify("--witness-key", keys[0], file=forged)
    assert code == 1 and "does not verify" in said, said
    code, said = verify("--witness-key", keys[1], file=forged)
    assert code == 0, said  # the other witness's line is intact

    # The audit counts the witnesses of the checkpoint it verifies, the same way.
    def audit(*options: object) -> tuple[int, dict[str, object]]:
        done = run_cli(
            "audit", "--server", url, "--log-key", log_vkey, "--no-replay", "--json", *options
        )
        assert done.returncode in (0, 1), done.stderr
        return done.returncode, json.loads(done.stdout)

    with served(data) as url:
        code, report = audit()
        assert code == 0 and report["cosignaturesSeen"] == 2, report
        assert "witnesses" not in report["checked"]
        code, report = audit("--witness-key", keys[0], "--witness-key", keys[1], "--quorum", "2")
        assert code == 0 and "witnesses" in report["checked"], report
        assert sorted(report["witnessesCosigned"]) == ["witness.test/w1", "witness.test/w2"]
        code, report = audit("--witness-key", keys[2], "--quorum", "1")
        failed = [f for f in report["failures"] if f["check"] == "witnesses"]  # type: ignore[union-attr]
        assert code == 1 and failed and "witness.test/w3" in failed[0]["detail"], report
        assert (
            run_cli("audit", "--server", url, "--log-key", log_vkey, "--quorum", "1").returncode
            == 2
        )

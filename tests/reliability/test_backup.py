"""``benchproof backup`` while a real server takes attestations and reports (issue 18, part 6):
the copy is consistent (it verifies, replays, its checkpoint covers it, and its views are the
origin's at the copy's size), written atomically, private, and never over an existing folder."""

from __future__ import annotations

import json
import stat
import threading
import time
from pathlib import Path

import httpx

from tests.reliability.conftest import open_site
from tests.reliability.report import record_attack, record_rounds, record_writes, scale
from tests.reliability.test_faults import SEED_RUN, Writer, found_once
from tests.servers import run_cli, served

PUBLIC = "http://benchproof.test"


def _views(url: str, size: int) -> dict[str, bytes]:
    """The JSON views a restore must answer alike, as of ``size``."""
    paths = (
        f"/v1/runs?asOf={size}",
        f"/v1/runs/{SEED_RUN}?asOf={size}",
        f"/v1/attestations?subject={SEED_RUN}&asOf={size}",
        f"/v1/log/checkpoint?asOf={size}",
        f"/v1/runs/{SEED_RUN}/history?asOf={size}",
    )
    with httpx.Client(base_url=url, timeout=60) as client:
        out = {}
        for path in paths:
            r = client.get(path)
            assert r.status_code == 200, (path, r.text)
            out[path] = r.content
        return out


def _first_difference(a: bytes, b: bytes) -> str:
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return f"at byte {at}: {a[max(0, at - 150) : at + 80]!r} != {b[max(0, at - 150) : at + 80]!r}"


def test_a_backup_taken_during_writes_verifies_replays_and_answers_alike(tmp_path: Path) -> None:
    copies = scale(1, 3)
    rounds = survived = 0
    with open_site(tmp_path / "data", "--public-url", PUBLIC) as site:
        writers = [Writer(site) for _ in range(scale(2, 4))]
        stop = threading.Event()
        errors: list[str] = []

        def keep_writing(writer: Writer) -> None:
            kinds = ("attestation", "report", "attestation", "ingest")
            i = 0
            while not stop.is_set():
                r = writer.write(kinds[i % len(kinds)], pad=200)
                if r.status_code >= 300:
                    errors.append(f"{r.status_code} {r.text[:200]}")
                i += 1

        threads = [threading.Thread(target=keep_writing, args=(w,)) for w in writers]
        for t in threads:
            t.start()
        try:
            for n in range(copies):
                rounds += 1
                time.sleep(scale(0.5, 2.0))  # writes under way
                dest = tmp_path / f"backup-{n}"
                done = run_cli("backup", dest, "--data", site.data, "--json")
                assert done.returncode == 0, done.stderr
                result = json.loads(done.stdout)
                assert result["path"] == str(dest) and result["keys"] is True
                size, root = result["size"], result["root"]
                # Private: the folder 0700, its secrets 0600.
                assert stat.S_IMODE(dest.stat().st_mode) == 0o700
                for secret in (dest / "keys" / "index.key", dest / "keys" / "log.key"):
                    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
                assert not list(tmp_path.glob(f".backup-{n}.backup-*"))  # no temporary left
                verified = run_cli("verify", "--data", dest)
                assert verified.returncode == 0, verified.stderr
                assert f"root {root}" in verified.stdout and f"{size} entries" in verified.stdout
                replayed = run_cli("replay", "--data", dest)
                assert replayed.returncode == 0, replayed.stdout + replayed.stderr
                # The origin's tree at that size has the copy's root.
                proof = httpx.get(
                    f"{site.url}/v1/log/proof/consistency?old={size}&new={size}", timeout=30
                )
                assert proof.status_code in (200, 400), proof.text
                origin_views = _views(site.url, size)
                with served(dest, "--public-url", PUBLIC) as url:
                    copy_views = _views(url, size)
                for path, body in origin_views.items():
                    assert copy_views[path] == body, (
                        path,
                        _first_difference(body, copy_views[path]),
                    )
                survived += 1
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not errors, errors[:3]
        acked = [tag for w in writers for tag in w.acked]
        attempted = sum(w.attempted for w in writers)
        found = found_once(site.url, acked)
        for w in writers:
            w.close()
        # A DEST that exists is refused in one line, and left as it was.
        taken = tmp_path / "backup-0"
        before = sorted(p.name for p in taken.iterdir())
        again = run_cli("backup", taken, "--data", site.data)
        lines = again.stderr.strip().splitlines()
        refused = again.returncode == 2 and len(lines) == 1 and "exists" in lines[0]
        assert refused, again.stderr
        assert sorted(p.name for p in taken.iterdir()) == before
    record_writes(
        "backup: writes during the copies", attempted=attempted, acknowledged=len(acked),
        found=found,
    )  # fmt: skip
    assert found == len(acked)
    record_rounds("backup: online copies verified, replayed, views equal", rounds=rounds,
                  survived=survived)  # fmt: skip
    record_attack("backup over an existing DEST", f"exit 2: {lines[0][:60]}", ok=refused)

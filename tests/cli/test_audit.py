"""``benchproof audit`` against a real ``benchproof serve``: a healthy log passes end to end, and
each lie is caught, served either by a small proxy in front of the honest server (a view, a
tile, a bundle changed on the way) or by a log that is itself wrong (a rewritten history, an
entry signed by a key the log never registered)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from events.tiles import decode_bundle, encode_bundle
from events.types import RerunRequested
from keys import SigningKey
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from tests.builders import bundle, ingest_event, key_registration, rerun_claim, rerun_v2
from tests.cli.conftest import Runner
from tests.corpora import corpus
from tests.integration.test_key_lifecycle import _attestation
from tests.servers import served

Lie = Callable[[str, bytes], bytes | None]
LIGER = corpus("liger-kernel-bench", "all_benchmark_data.csv")
CUTILE = corpus("liger-kernel-bench", "all_benchmark_data_cutile.csv")


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory, bp: Runner) -> Iterator[tuple[Path, str]]:
    """A log of about 2,450 entries (full and partial tiles), a copy of its genesis (same keys,
    for a rewritten history), served."""
    root = tmp_path_factory.mktemp("audit")
    data = root / "origin"
    assert bp("init", "--data", data).returncode == 0
    shutil.copytree(data, root / "genesis")
    out = bp("ingest", "liger", LIGER, "--data", data)
    assert out.returncode == 0, out.stderr
    with served(data) as url:
        yield data, url


@pytest.fixture(scope="module")
def vkey(origin: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vkey") / "log.vkey"
    path.write_text(httpx.get(origin[1] + "/v1/log/key").text)
    return path


@contextmanager
def lying(upstream: str, lie: Lie) -> Iterator[str]:
    """A proxy in front of ``upstream`` that passes every GET on, with its body through
    ``lie(path, body)`` (None: a 503 instead)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = httpx.get(upstream + self.path)
            lied = lie(self.path, answer.content)
            body = b"unavailable" if lied is None else lied
            self.send_response(answer.status_code if lied is not None else 503)
            for name, value in answer.headers.items():
                if name.lower() not in ("content-length", "content-encoding", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _audit(bp: Runner, url: str, vkey: Path, *extra: object) -> tuple[int, dict[str, object]]:
    out = bp("audit", "--server", url, "--log-key", vkey, "--json", *extra)
    assert out.returncode in (0, 1), out.stderr
    return out.returncode, json.loads(out.stdout)


def _failures(report: dict[str, object]) -> list[dict[str, object]]:
    failures = report["failures"]
    assert isinstance(failures, list)
    return failures


def test_a_healthy_server_passes_end_to_end(
    bp: Runner, origin: tuple[Path, str], vkey: Path, tmp_path: Path
) -> None:
    data, url = origin
    state = tmp_path / "audit-state.json"
    # Every run of the log is compared.
    code, report = _audit(bp, url, vkey, "--state", state)
    assert code == 0, report
    runs = len(bp("runs", "list", "--data", data, "--json").stdout.splitlines())
    assert report["runsCompared"] == report["answersSigned"] == runs
    size = int(httpx.get(url + "/checkpoint").text.splitlines()[1])
    assert report["entries"] == size
    assert json.loads(state.read_text())["size"] == size
    # The second audit proves consistency from the first and fetches nothing it holds already;
    # a person reads its table.
    out = bp("audit", "--server", url, "--log-key", vkey, "--state", state, "--sample", "20")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "audit passed" in out.stdout
    checks = ("checkpoint", "consistency", "tiles", "tree", "signatures", "replay", "views")
    for check in checks:
        assert any(line.split()[:2] == [check, "ok"] for line in out.stdout.splitlines()), check
    assert f"{size:,} verified (0 fetched)" in out.stdout
    assert f"previous        size {size:,}" in out.stdout


def test_a_sample_compares_that_many_runs(bp: Runner, origin: tuple[Path, str], vkey: Path) -> None:
    code, report = _audit(bp, origin[1], vkey, "--sample", "25", "--seed", "7")
    assert code == 0, report
    assert report["runsCompared"] == 25


def test_a_rewritten_history_fails_naming_both_checkpoints(
    bp: Runner, origin: tuple[Path, str], vkey: Path, tmp_path: Path
) -> None:
    data, url = origin
    state = tmp_path / "state.json"
    assert _audit(bp, url, vkey, "--state", state, "--sample", "5")[0] == 0
    old = json.loads(state.read_text())
    # The same log key signs another history: other entries from position 3 on, and more.
    forked = tmp_path / "forked"
    shutil.copytree(data.parent / "genesis", forked)
    for path in (CUTILE, LIGER):
        assert bp("ingest", "liger", path, "--data", forked).returncode == 0
    with served(forked) as other:
        code, report = _audit(bp, other, vkey, "--state", state, "--sample", "5")
    assert code == 1
    (failure,) = [f for f in _failures(report) if f["check"] == "consistency"]
    detail = str(failure["detail"])
    assert f"size {old['size']}, root {old['root']}" in detail
    assert f"root {report['root']}" in detail
    assert "rewritten" in detail
    # A failed audit does not move the remembered checkpoint.
    assert json.loads(state.read_text()) == old


def test_a_view_that_differs_from_the_replay_names_the_run_and_field(
    bp: Runner, origin: tuple[Path, str], vkey: Path
) -> None:
    def lie(path: str, body: bytes) -> bytes | None:
        if not path.startswith("/v1/runs/"):
            return body
        view = json.loads(body)
        view["evidenceLevel"] = "verified"
        if view.get("rank"):
            view["rank"]["rank"] += 1
        return json.dumps(view).encode()

    with lying(origin[1], lie) as url:
        code, report = _audit(bp, url, vkey, "--sample", "10")
    assert code == 1
    views = [f for f in _failures(report) if f["check"] == "views"]
    assert len(views) == 10
    assert {f["field"] for f in views} == {"evidenceLevel"}
    assert all(str(f["run"]).startswith("sha256:") for f in views)


def test_a_rank_that_differs_is_named(bp: Runner, origin: tuple[Path, str], vkey: Path) -> None:
    def lie(path: str, body: bytes) -> bytes | None:
        if not path.startswith("/v1/runs/"):
            return body
        view = json.loads(body)
        if view.get("rank"):
            view["rank"]["rank"] += 1
        return json.dumps(view).encode()

    with lying(origin[1], lie) as url:
        code, report = _audit(bp, url, vkey, "--sample", "40", "--seed", "1")
    assert code == 1
    assert {f["field"] for f in _failures(report) if f["check"] == "views"} == {"rank.rank"}


def _bundle_lie(change: Callable[[list[bytes]], list[bytes]]) -> Lie:
    def lie(path: str, body: bytes) -> bytes | None:
        if path != "/tile/entries/001":
            return body
        return encode_bundle(change(decode_bundle(body)))

    return lie


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda leaves: leaves[:-1], id="dropped"),
        pytest.param(lambda leaves: [leaves[1], leaves[0], *leaves[2:]], id="reordered"),
    ],
)
def test_a_dropped_or_reordered_entry_fails(
    bp: Runner,
    origin: tuple[Path, str],
    vkey: Path,
    change: Callable[[list[bytes]], list[bytes]],
) -> None:
    with lying(origin[1], _bundle_lie(change)) as url:
        code, report = _audit(bp, url, vkey, "--sample", "3")
    assert code == 1
    failures = _failures(report)
    assert failures
    assert failures[0]["check"] in ("tiles", "tree", "log")
    assert report["runsCompared"] == 0  # nothing is replayed from a log that does not verify


def test_a_reordered_bundle_with_its_tile_reordered_fails_on_the_root(
    bp: Runner, origin: tuple[Path, str], vkey: Path
) -> None:
    def lie(path: str, body: bytes) -> bytes | None:
        if path == "/tile/entries/001":
            leaves = decode_bundle(body)
            return encode_bundle([leaves[1], leaves[0], *leaves[2:]])
        if path == "/tile/0/001":
            return body[32:64] + body[:32] + body[64:]
        return body

    with lying(origin[1], lie) as url:
        code, report = _audit(bp, url, vkey, "--sample", "3")
    assert code == 1
    reasons = " ".join(str(f["detail"]) for f in _failures(report))
    assert "moved or reordered" in reasons
    assert "tree node" in reasons or "root" in reasons


@pytest.mark.parametrize("path", ["/tile/0/000", "/tile/1/000.p/9"])
def test_a_tile_that_does_not_match_the_checkpoint_fails(
    bp: Runner, origin: tuple[Path, str], vkey: Path, path: str
) -> None:
    size = int(httpx.get(origin[1] + "/checkpoint").text.splitlines()[1])
    assert size // 256 == 9, "the level-1 tile of this log is 9 wide"

    def lie(asked: str, body: bytes) -> bytes | None:
        return body[:-1] + bytes([body[-1] ^ 1]) if asked == path else body

    with lying(origin[1], lie) as url:
        code, report = _audit(bp, url, vkey, "--sample", "3")
    assert code == 1
    assert any(f["check"] == "tree" for f in _failures(report)), report


def test_an_entry_signed_by_an_unknown_key_fails(
    bp: Runner, tmp_path: Path, vkey: Path, origin: tuple[Path, str]
) -> None:
    data = tmp_path / "patched"
    shutil.copytree(origin[0].parent / "genesis", data)
    with Ledger.open(data) as ledger:
        ledger.append_pending([_attestation(SigningKey.generate(), "nobody registered me")])
        position = ledger.store.size - 1
    with served(data) as url:
        code, report = _audit(bp, url, vkey)
    assert code == 1
    failure = _failures(report)[0]
    assert failure["check"] == "signatures"
    assert failure["position"] == position
    assert "not valid at this position" in str(failure["detail"])


def test_a_checkpoint_by_another_key_fails(
    bp: Runner, origin: tuple[Path, str], tmp_path: Path
) -> None:
    other = tmp_path / "other"
    assert bp("init", "--data", other).returncode == 0
    key = tmp_path / "other.vkey"
    key.write_text(bp("log", "key", "--data", other).stdout)
    code, report = _audit(bp, origin[1], key)
    assert code == 1
    assert _failures(report)[0]["check"] == "checkpoint"


def test_bad_input_is_exit_2(bp: Runner, origin: tuple[Path, str], tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_text("not a key\n")
    out = bp("audit", "--server", origin[1], "--log-key", junk)
    assert out.returncode == 2
    assert "not a vkey" in out.stderr
    assert out.stderr.count("\n") == 1
    key = tmp_path / "k"
    key.write_text(httpx.get(origin[1] + "/v1/log/key").text)
    out = bp("audit", "--server", "http://127.0.0.1:9", "--log-key", key)
    assert out.returncode == 2
    assert "cannot read" in out.stderr


def test_an_answer_whose_signature_does_not_hold_fails(
    bp: Runner, origin: tuple[Path, str], vkey: Path
) -> None:
    """The same view, one byte longer: the replay agrees with it, the log key's signature over
    the body the server sent does not."""

    def lie(path: str, body: bytes) -> bytes | None:
        return body + b" " if path.startswith("/v1/runs/") else body

    with lying(origin[1], lie) as url:
        code, report = _audit(bp, url, vkey, "--sample", "4")
    assert code == 1
    failures = _failures(report)
    assert {f["check"] for f in failures} == {"signed answers"}
    assert len(failures) == 4
    assert report["answersSigned"] == 0


def test_a_healthy_audit_checks_every_answers_signature(
    bp: Runner, origin: tuple[Path, str], vkey: Path
) -> None:
    code, report = _audit(bp, origin[1], vkey, "--sample", "6")
    assert code == 0
    assert report["answersSigned"] == 6


def test_a_fork_at_the_same_size_fails_naming_both_checkpoints(
    bp: Runner, origin: tuple[Path, str], vkey: Path, tmp_path: Path
) -> None:
    """The same import again over the same genesis: as many entries, recorded at other times,
    so another root at the same size, signed by the same log key."""
    data, url = origin
    state = tmp_path / "state.json"
    assert _audit(bp, url, vkey, "--state", state, "--sample", "3")[0] == 0
    old = json.loads(state.read_text())
    forked = tmp_path / "forked"
    shutil.copytree(data.parent / "genesis", forked)
    assert bp("ingest", "liger", LIGER, "--data", forked).returncode == 0
    with served(forked) as other:
        code, report = _audit(bp, other, vkey, "--state", state, "--sample", "3")
    assert code == 1
    assert report["treeSize"] == old["size"]
    (failure,) = _failures(report)
    assert failure["check"] == "consistency"
    assert f"size {old['size']}, root {old['root']}" in str(failure["detail"])
    assert f"root {report['root']}" in str(failure["detail"])
    assert json.loads(state.read_text()) == old


def test_a_server_that_stops_serving_its_tiles_fails_the_audit(
    bp: Runner, origin: tuple[Path, str], vkey: Path
) -> None:
    def lie(path: str, body: bytes) -> bytes | None:
        return None if path == "/tile/entries/002" else body

    with lying(origin[1], lie) as url:
        code, report = _audit(bp, url, vkey, "--sample", "3")
    assert code == 1
    (failure,) = _failures(report)
    assert failure["check"] == "tiles"
    assert "tile/entries/002" in str(failure["detail"])


def test_the_fast_path_checks_the_log_but_neither_replays_nor_compares(
    bp: Runner, origin: tuple[Path, str], vkey: Path
) -> None:
    code, report = _audit(bp, origin[1], vkey, "--no-replay")
    assert code == 0
    assert report["entries"] == report["treeSize"]
    assert report["runsCompared"] == 0
    assert report["checked"] == ["checkpoint", "tiles", "tree", "signatures", "log"]


def test_a_log_holding_a_rerun_passes(bp: Runner, tmp_path: Path) -> None:
    """A rerun's samples are a tuple in the replay's dossier and a list in the server's JSON:
    the audit compares them as the same JSON array (it used to fail on every such log)."""
    data = tmp_path / "data"
    ledger, _ = init_data_dir(data)
    with ledger:
        parts = bundle(group=1, author=1, value=1000, raw_evidence=True)
        digest = parts["run"].digest
        ledger.append([(ingest_event(parts), digest)])
        worker = SigningKey.generate()
        ledger.append([(key_registration(worker, "rerunner"), worker.key_id)])
        request = ledger.append([(RerunRequested(runDigest=digest, reason="audit"), digest)])[0]
        ledger.append_pending([rerun_claim(digest, request.payloadDigest, worker)])
        samples = [1010.0, 990.0, 1000.0, 1005.0, 995.0]
        ledger.append_pending([rerun_v2(digest, worker, samples, request_id=request.payloadDigest)])
    key = tmp_path / "log.vkey"
    key.write_text(bp("log", "key", "--data", data).stdout)
    with served(data) as url:
        (rerun,) = httpx.get(f"{url}/v1/runs/{digest}").json()["reruns"]
        assert rerun["samples"] == samples  # what the audit compares the replay with
        code, report = _audit(bp, url, key)
    assert code == 0, report
    assert report["runsCompared"] == 1
    checked = report["checked"]
    assert isinstance(checked, list) and "views" in checked

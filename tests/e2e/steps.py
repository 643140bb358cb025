"""The steps of the end-to-end scenarios (ingest, attest, rerun, cite, audit), each through the
public surface only: the ``benchproof`` console script and a served log's HTTP API.

Each step asserts what its users are promised and returns what the next step needs, so the
scenario tests run them one by one and ``test_stores_agree`` runs them all to build one log."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.corpora import corpus, shared_file
from tests.e2e.cpurun import cpu_bundle
from tests.e2e.deployment import Deployment, Server
from tests.servers import run_cli

SEED_ALIAS = "sol-execbench:165"  # the seed manifest's run, by the id its source shows
LIGER_ROWS = 120  # the first rows of Liger-Kernel's CSV: a few kernels, two or three providers


@dataclass(frozen=True)
class Ingested:
    """What the ingest step left: the seed run, the Liger runs each way took, the log size
    between the command-line imports and the one over HTTP, and the operator's token."""

    seed: str
    cli_runs: list[str]
    http_runs: list[str]
    size_before_http: int
    token: str
    cli_slice: Path
    http_slice: Path


def liger_slices(folder: Path) -> tuple[Path, Path]:
    """The first ``LIGER_ROWS`` rows of Liger-Kernel's benchmark CSV in two files (each under the
    upstream name, with the header): Liger's own rows for the command line, the other providers'
    for the operator's HTTP ingest. Providers compete in one comparison group, so the groups get
    members both ways."""
    lines = corpus("liger-kernel-bench", "all_benchmark_data.csv").read_text().splitlines(True)
    header, rows = lines[0], lines[1 : 1 + LIGER_ROWS]
    own = [row for row in rows if row.split(",")[1] == "liger"]
    others = [row for row in rows if row.split(",")[1] != "liger"]
    assert own and others
    slices = []
    for name, part in (("cli", own), ("http", others)):
        path = folder / name / "all_benchmark_data.csv"
        path.parent.mkdir(parents=True)
        path.write_text(header + "".join(part))
        slices.append(path)
    return slices[0], slices[1]


def ingest_by_cli(deployment: Deployment) -> tuple[Path, Path]:
    """``benchproof ingest manifest`` of the seed manifest and ``benchproof ingest liger`` of the
    first slice; returns both slices (the second is for HTTP)."""
    seeded = deployment.ok("ingest", "manifest", shared_file("seed-manifest.json"))
    assert "1 runs" in seeded, seeded
    cli_slice, http_slice = liger_slices(deployment.root / "liger")
    imported = deployment.ok("ingest", "liger", cli_slice)
    assert f"{rows(cli_slice)} runs" in imported, imported
    return cli_slice, http_slice


def rows(path: Path) -> int:
    """The rows of a CSV file, its header not counted."""
    return len(path.read_text().splitlines()) - 1


def post_ingest(server: Server, token: str, source: str, path: Path, **query: str) -> Any:
    """``POST /v1/ingest/{source}`` of ``path``'s bytes with the operator's token; its answer."""
    answer = server.http.post(
        f"/v1/ingest/{source}",
        params={"filename": path.name, **query},
        content=path.read_bytes(),
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def source_runs(server: Server, source: str) -> list[str]:
    """The digests of every run of ``source`` (``GET /v1/runs?source=…``, one page)."""
    page = server.get(f"/v1/runs?source={source}&limit=1000")
    assert page["next"] is None
    return [item["runDigest"] for item in page["items"]]


def ingest(deployment: Deployment, server: Server, cli_slice: Path, http_slice: Path) -> Ingested:
    """With the command-line imports done: the operator's ingest over HTTP, then each import
    again (by both ways), which appends nothing."""
    token = deployment.token("e2e-operator")
    before = server.size()
    cli_runs = source_runs(server, "liger")
    assert len(cli_runs) == rows(cli_slice)
    posted = post_ingest(server, token, "liger", http_slice)
    assert (posted["runsAppended"], posted["runsKnown"]) == (rows(http_slice), 0), posted
    assert posted["size"] == server.size() == before + posted["entries"]
    http_runs = sorted(set(source_runs(server, "liger")) - set(cli_runs))
    assert len(http_runs) == rows(http_slice)

    after = server.size()
    again = post_ingest(server, token, "liger", http_slice)
    assert (again["runsAppended"], again["entries"], again["size"]) == (0, 0, after), again
    for source, path in (("manifest", shared_file("seed-manifest.json")), ("liger", cli_slice)):
        repeated = deployment.ok("ingest", source, path)
        assert repeated.startswith("nothing new"), repeated
    assert server.size() == after
    seed = server.run(SEED_ALIAS)["runDigest"]
    return Ingested(seed, cli_runs, http_runs, before, token, cli_slice, http_slice)


def register_key(deployment: Deployment, server: Server, name: str) -> tuple[Path, str]:
    """``benchproof keygen`` and ``benchproof keys register`` (challenge, then the registration
    signed by the key itself); the key file and its id."""
    key = deployment.root / f"{name}.key"
    key_id = deployment.ok("keygen", key, "--name", name).splitlines()[0]
    registered = json.loads(deployment.ok("keys", "register", "--key", key, "--name", name,
                                          "--server", server.url))  # fmt: skip
    assert (registered["keyId"], registered["role"]) == (key_id, "community")
    shown = server.get(f"/v1/keys/{key_id}")
    assert (shown["name"], shown["role"]) == (name, "community")
    return key, key_id


def attest_and_withdraw(deployment: Deployment, server: Server, run: str) -> str:
    """A community key attests ``run`` (``benchproof attest``), the attestation is listed, then
    withdrawn by its author (``benchproof withdraw``). Attestations are shown and counted and
    never change a run's evidence level (DESIGN §7); returns the attestation's id."""
    key, key_id = register_key(deployment, server, "e2e-attester")
    level = server.run(run)["evidenceLevel"]
    before = server.size()
    attest = ("attest", run, "--kind", "reproduced", "--value", "812", "--unit", "ns",
              "--note", "same container", "--key", key, "--server", server.url)  # fmt: skip
    posted = json.loads(deployment.ok(*attest))
    assert posted["index"] == before and server.size() == before + 1
    assert posted["inclusionProof"]["index"] == before
    again = json.loads(deployment.ok(*attest))  # the same statement: the entry held already
    assert again["id"] == posted["id"] and server.size() == before + 1

    listed = server.get(f"/v1/attestations?subject={run}")["items"]
    assert [(a["id"], a["attester"]) for a in listed] == [(posted["id"], key_id)]
    by_key = server.get(f"/v1/attestations?attester={key_id}")["items"]
    assert [a["id"] for a in by_key] == [posted["id"]]
    dossier = server.run(run)
    assert [a["id"] for a in dossier["attestations"]] == [posted["id"]]
    assert dossier["evidenceLevel"] == level

    deployment.ok("withdraw", posted["id"], "--reason", "wrong clocks", "--key", key,
                  "--server", server.url)  # fmt: skip
    assert server.size() == before + 2
    [shown] = server.run(run)["attestations"]
    assert (shown["withdrawn"], shown["withdrawalReason"]) == (True, "wrong clocks")
    assert server.get(f"/v1/attestations/{posted['id']}")["attestation"]["withdrawn"] is True
    assert server.run(run)["evidenceLevel"] == level
    earlier = server.get(f"/v1/runs/{run}?asOf={before + 1}")
    assert [a.get("withdrawn", False) for a in earlier["attestations"]] == [False]
    return str(posted["id"])


def rerun(deployment: Deployment, server: Server, token: str) -> str:
    """An operator ingests a run of this machine's CPU over HTTP and asks for a rerun of it
    (``benchproof rerun request``); a worker with a rerunner key (``keys grant``) claims it under
    a lease and posts what the shipped CPU harness measured (``benchproof rerun-worker --once``).
    Exactly one result lands, and the run is ``verified`` or ``disputed`` as the index judged
    it; a second worker pass finds nothing to do. Returns the run's digest."""
    bundle = deployment.root / "cpu-run.json"
    bundle.write_text(json.dumps(cpu_bundle()))
    assert post_ingest(server, token, "manifest", bundle)["runsAppended"] == 1
    [run] = source_runs(server, "e2e-cpu")
    assert server.run(run)["evidenceLevel"] in {"reported", "reproducible"}

    key, key_id = register_key(deployment, server, "e2e-rerunner")
    deployment.ok("keys", "grant", key_id, "--role", "rerunner", "--token", token,
                  "--server", server.url)  # fmt: skip
    assert server.get(f"/v1/keys/{key_id}")["role"] == "rerunner"
    deployment.ok("rerun", "request", run, "--reason", "e2e", "--token", token,
                  "--server", server.url)  # fmt: skip
    [pending] = server.get("/v1/reruns?state=pending")["items"]
    assert (pending["runDigest"], pending["needs"]["kind"]) == (run, "cpu")

    before = server.size()
    worker = run_cli("rerun-worker", "--server", server.url, "--key", key, "--once",
                     "--lease", "600", timeout=300)  # fmt: skip
    assert worker.returncode == 0, worker.stderr
    assert server.size() == before + 2  # its claim, then its one result
    assert server.get("/v1/reruns?state=pending")["items"] == []
    [completed] = server.get("/v1/reruns?state=completed")["items"]
    assert (completed["requestId"], completed["claimer"]) == (pending["requestId"], key_id)
    dossier = server.run(run)
    [result] = dossier["reruns"]
    assert (result["rerunner"], result["requestId"]) == (key_id, pending["requestId"])
    assert result["correctnessPassed"] is True
    assert len(result["samples"]) >= pending["minSamples"]
    if result["withinTolerance"]:
        assert dossier["evidenceLevel"] == "verified"
    else:
        assert dossier["evidenceLevel"] == "disputed" and result["why"], result

    idle = run_cli("rerun-worker", "--server", server.url, "--key", key, "--once", timeout=300)
    assert idle.returncode == 0, idle.stderr
    assert server.size() == before + 2
    assert len(server.run(run)["reruns"]) == 1
    return run


def cite(deployment: Deployment, server: Server, run: str) -> tuple[Path, Path]:
    """``benchproof cite RUN --format receipt --server URL`` and the log's vkey as the server
    gives it (the same as ``benchproof log key``); both files, for the offline check."""
    receipt = deployment.root / "receipt.txt"
    done = run_cli("cite", run, "--format", "receipt", "--server", server.url)
    assert done.returncode == 0, done.stderr
    receipt.write_text(done.stdout)
    vkey = deployment.vkey()
    answer = server.http.get("/v1/log/key")
    assert answer.status_code == 200 and answer.text.strip() == vkey.read_text().strip()
    assert f"run: {run}\n" in done.stdout
    return receipt, vkey


def check_receipt_offline(receipt: Path, vkey: Path, run: str) -> None:
    """``benchproof verify-citation`` with no server and no data directory: the receipt holds;
    a changed header line, or a changed byte of its signed statement, is refused (exit 1)."""
    held = run_cli("verify-citation", receipt, "--log-key", vkey)
    assert held.returncode == 0, held.stderr
    assert run in held.stdout
    text = receipt.read_text()
    header = text.replace("evidence: ", "evidence: verified-", 1)
    statement_line = next(line for line in text.splitlines() if line.startswith("statement "))
    encoded = statement_line.removeprefix("statement ")
    flipped = ("B" if encoded[8] == "A" else "A").join((encoded[:8], encoded[9:]))
    body = text.replace(statement_line, "statement " + flipped)
    for tampered, check in ((header, "bytes"), (body, "")):
        forged = receipt.with_name("tampered.txt")
        forged.write_text(tampered)
        refused = run_cli("verify-citation", forged, "--log-key", vkey)
        assert refused.returncode == 1, (refused.stdout, refused.stderr)
        assert "does not verify" in refused.stderr and check in refused.stderr


def audit(deployment: Deployment, server: Server) -> dict[str, Any]:
    """``benchproof audit --server URL --log-key VKEY --json``: the served log's tiles, tree and
    signatures verify, and its signed views equal a replay; the report."""
    vkey = deployment.vkey()
    done = run_cli("audit", "--server", server.url, "--log-key", vkey, "--json", timeout=300)
    assert done.returncode == 0, (done.stdout, done.stderr)
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["ok"] is True and report["failures"] == []
    assert report["treeSize"] == report["entries"] == server.size()
    assert report["runsCompared"] == report["answersSigned"] > 0
    return report

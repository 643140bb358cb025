"""One log, two stores: built on SQLite through every scenario's steps, copied to PostgreSQL
leaf for leaf (``benchproof migrate-store``), then ``verify --json`` and ``replay --json`` on
each give the same size, the same root and the same projection digests.

Collected only when a PostgreSQL cluster is given (``BENCHPROOF_TEST_PG``; see conftest.py)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx

from tests.e2e import steps
from tests.e2e.deployment import Deployment, Server
from tests.servers import run_cli
from tests.stores import drop_pg_schema, make_store_url


def test_sqlite_and_postgresql_agree_on_one_log(tmp_path: Path) -> None:
    sqlite = Deployment(tmp_path / "sqlite", "")
    sqlite.init()
    cli_slice, http_slice = steps.ingest_by_cli(sqlite)
    with sqlite.serve() as server:
        done = steps.ingest(sqlite, server, cli_slice, http_slice)
        steps.attest_and_withdraw(sqlite, server, done.seed)
        rerun = steps.rerun(sqlite, server, done.token)
        receipt, vkey = steps.cite(sqlite, server, rerun)
        steps.audit(sqlite, server)
    steps.check_receipt_offline(receipt, vkey, rerun)

    url = make_store_url("postgresql", tmp_path)
    assert url.startswith("postgresql://")
    try:
        _compare(sqlite, url, rerun, receipt, vkey)
    finally:
        drop_pg_schema(url)


def _compare(sqlite: Deployment, url: str, rerun: str, receipt: Path, vkey: Path) -> None:
    """Copy ``sqlite``'s log into the store ``url``; both give the same verify and replay."""
    on_sqlite = sqlite.state()
    source = f"sqlite:///{sqlite.data / 'benchproof.db'}"
    migrated = run_cli("migrate-store", source, url, timeout=600)
    assert migrated.returncode == 0, (migrated.stdout, migrated.stderr)
    # The same keys and data directory, the log read from PostgreSQL.
    postgresql = Deployment(sqlite.root, url, pinned=True)
    on_postgresql = postgresql.state()

    assert on_postgresql.size == on_sqlite.size > 0
    assert on_postgresql.root == on_sqlite.root
    assert on_postgresql.digests == on_sqlite.digests
    # The live projections themselves, row for row (replay's digests are of its rebuilds).
    assert _live_digests(url) == _live_digests(source)
    assert postgresql.ok("log", "checkpoint") == sqlite.ok("log", "checkpoint")
    # Served from PostgreSQL, the copy passes the remote audit, and the log that issued the
    # receipt on SQLite answers for it (same key, a consistent checkpoint).
    pinned_sqlite = Deployment(sqlite.root, source, pinned=True)
    public = ("--public-url", "https://index.example")  # the same permalinks in both answers
    with postgresql.serve(*public) as server, pinned_sqlite.serve(*public) as served_sqlite:
        _same_answers(served_sqlite, server, on_sqlite.size)
        assert server.run(rerun)["runDigest"] == rerun
        assert server.size() == on_sqlite.size
        steps.audit(postgresql, server)
        online = run_cli("verify-citation", receipt, "--log-key", vkey, "--server", server.url)
        assert online.returncode == 0, online.stderr


def _paths(server: Server, size: int) -> list[str]:
    """The reads to compare: every kind of view, now and as of several older sizes."""
    runs = [r["runDigest"] for r in server.get("/v1/runs?limit=200")["items"]]
    links = (server.run(r)["links"].get("group") for r in runs)
    groups = sorted({link.rsplit("/groups/", 1)[1] for link in links if link})
    attestations = server.get("/v1/attestations")
    assert len(runs) > 20 and groups and attestations["items"]
    sizes = sorted({3, size // 3, size // 2, size - 1, size})
    paths = ["/v1/keys", "/v1/reruns", "/v1/sources", "/", "/log", "/v1/log/checkpoint"]
    paths += ["/v1/runs?q=liger", "/v1/runs?q=ATTENTION&limit=5", "/v1/runs?evidenceLevel=verified"]
    for at in sizes:
        paths += [
            f"/v1/runs?asOf={at}",
            f"/v1/runs?limit=7&asOf={at}",
            f"/v1/log/entries?start=0&asOf={at}",
        ]
        paths += [f"/v1/runs/{r}?asOf={at}" for r in runs[:40]]
        paths += [f"/v1/groups/{quote(g, safe='')}?asOf={at}" for g in groups[:20]]
    paths += [f"/v1/runs/{r}/history" for r in runs[:40]]
    paths += [f"/runs/{r}" for r in runs[:10]]
    paths += [f"/v1/attestations?subject={a['runDigest']}" for a in attestations["items"][:5]]
    paths += [f"/v1/attestations/{a['id']}" for a in attestations["items"][:5]]
    keys = [k["keyId"] for k in server.get("/v1/keys")["items"]]
    paths += [f"/v1/keys/{k}" for k in keys] + [f"/v1/keys/{k}/entries" for k in keys]
    paths += [f"/keys/{k}" for k in keys]
    paths += [f"/v1/groups/{quote(g, safe='')}/history" for g in groups[:10]]
    paths += [f"/groups/{quote(g, safe='')}" for g in groups[:5]]
    paths += [f"/v1/runs/{r}/history?asOf={size // 2}" for r in runs[:10]]
    paths += [f"/v1/compare?runs={runs[0]},{runs[1]}", f"/compare?runs={runs[0]},{runs[1]}"]
    paths += [f"/v1/runs?source=liger&limit=3&asOf={at}" for at in sizes]
    paths += ["/v1/runs?q=e&limit=50", "/v1/runs?q=%25", "/v1/runs?q=_", "/?q=liger"]
    paths += ["/v1/runs?evidenceLevel=reported&limit=9", "/v1/reruns?state=completed"]
    paths += ["/v1/log/entries?start=0&end=40", f"/v1/log/proof/inclusion?index=2&size={size}"]
    paths += [f"/v1/log/proof/consistency?old=3&new={size}"]
    paths += [f"/v1/runs/{r}/citation?format=csl-json" for r in runs[:5]]
    page = server.get("/v1/runs?limit=13")
    while page.get("next"):
        paths.append(f"/v1/runs?limit=13&after={quote(page['next'], safe='')}")
        page = server.get(paths[-1])
    return paths


def _same_answers(sqlite: Server, postgresql: Server, size: int) -> None:
    """Both servers give the same answer to every read, byte for byte: status, body and
    signature (the same key signs the same bytes: Ed25519 is deterministic)."""
    compared = answered = 0
    kinds: set[str] = set()  # the kinds of read that answered 200 (the API's second segment)
    with httpx.Client(timeout=60) as client:
        for path in _paths(sqlite, size):
            a = client.get(sqlite.url + path)
            b = client.get(postgresql.url + path)
            assert (a.status_code, path) == (b.status_code, path)
            if a.content != b.content:
                import difflib

                diff = "\n".join(
                    difflib.unified_diff(a.text.splitlines(), b.text.splitlines(), lineterm="", n=1)
                )
                raise AssertionError(f"{path}\n{diff}")
            signature = "Benchproof-Signature"
            assert a.headers.get(signature) == b.headers.get(signature), path
            compared += 1
            answered += a.status_code == 200
            parts = path.split("?")[0].split("/")
            if a.status_code == 200 and len(parts) > 2 and parts[1] == "v1":
                kinds.add(parts[2])
    assert compared > 300 and answered > 250, (compared, answered)
    assert {"runs", "groups", "keys", "attestations", "log", "reruns", "compare"} <= kinds, kinds


def _live_digests(url: str) -> dict[str, str]:
    """The digest of every live projection table of the log at ``url``."""
    from events.stores import open_reader
    from projections.compare import table_digest
    from projections.schema import TABLES

    log = open_reader(url)
    try:
        return {table: table_digest(log.session, table) for table in TABLES}
    finally:
        log.close()

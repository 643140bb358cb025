"""Steps 4 and 5 of ``benchproof audit`` (``service.app.audit``): the verified leaves replayed
into a scratch store, every projection rebuilt there (as ``service.core.rebuild`` decides: on
every core for a large log), and the server's dossier of each run (or a sample) held against
the replay's, field by field."""

from __future__ import annotations

import random
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

from events.errors import EventError, LogError
from events.stores.sqlite import SqliteLog
from projections import queries
from projections.materialize import Materializer
from service.app.auditreport import AuditReport, Failure, Phase
from service.app.runs import show_run
from service.core.rebuild import rebuild_in_place
from verifier.answers import ABSENT, first_difference
from verifier.tiles import (
    FetchedCheckpoint,
    HttpSource,
    LeafStream,
    SourceError,
    SourceInvalid,
    TileSource,
)

__all__ = ["compare_views", "replay_leaves"]

PIECE = 4096
AHEAD = 32  # answers fetched ahead of the comparison (8 connections, 4 each)
_ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder()


def replay_leaves(
    report: AuditReport,
    src: TileSource,
    fetched: FetchedCheckpoint,
    cache: Path,
    scratch: Path,
    progress: Callable[[str, int, int | None], None] | None,
) -> SqliteLog | None:
    """Take the verified leaves into a scratch store and rebuild every projection there."""
    size = fetched.body.size
    report.checked.append("replay")
    started = time.perf_counter()
    db = scratch / "replay.db"
    store = SqliteLog.open(db, origin=fetched.body.origin, create=True)
    try:
        # From the tile cache, a piece at a time: one piece of leaves in memory, not the log.
        store.append_leaf_pieces(0, _pieces(LeafStream(src, size, cache=cache)), fetched.checkpoint)
    except (SourceInvalid, SourceError) as exc:
        store.close()
        shutil.rmtree(cache, ignore_errors=True)
        report.failures.append(Failure("replay", exc.detail))
        return None
    except (LogError, EventError) as exc:
        store.close()
        report.failures.append(Failure("replay", str(exc)))
        return None
    try:
        if progress is not None:
            progress("replay", 0, size)
        with store.transaction():
            materializer = Materializer(store.session)
            rebuild_in_place(materializer, store, size, db=db, scratch=scratch)
    except (LogError, EventError) as exc:
        store.close()
        report.failures.append(Failure("replay", str(exc)))
        return None
    if progress is not None:
        progress("replay", size, size)
    report.phases.append(Phase("replay", size, time.perf_counter() - started))
    return store


def _pieces(stream: LeafStream, piece: int = PIECE) -> Iterator[list[bytes]]:
    """The stream's leaves, in lists of about ``piece``."""
    leaves: list[bytes] = []
    for bundle in stream:
        leaves.extend(bundle.leaves)
        if len(leaves) >= piece:
            yield leaves
            leaves = []
    if leaves:
        yield leaves


def compare_views(
    report: AuditReport,
    server: str,
    store: SqliteLog,
    size: int,
    sample: int | None,
    seed: int | None,
    progress: Callable[[str, int, int | None], None] | None,
    check_answer: Callable[[str, Any, bytes], str | None] | None,
) -> None:
    """The server's dossier of each run as of ``size`` against the replay's."""
    started = time.perf_counter()
    report.checked.append("views")
    if check_answer is not None:
        report.checked.append("signed answers")
    conn = store.session
    total = queries.count_runs(conn, size)
    digests: Iterable[str] = queries.iter_run_digests(conn, size)
    if sample is not None and sample < total:
        # Unpredictable unless the auditor names a seed (to repeat a sample): a server that
        # knew the sample could lie about the other runs. The sample is drawn by position in
        # digest order, so a seed picks the same runs as drawing from the list would.
        chooser = random.SystemRandom() if seed is None else random.Random(seed)  # noqa: S311
        chosen = set(chooser.sample(range(total), sample))
        digests = sorted(d for i, d in enumerate(digests) if i in chosen)
        total = sample
    http = HttpSource(server, connections=8)

    def fetch(digest: str) -> tuple[str, int, Any, bytes]:
        target = f"/v1/runs/{digest}?asOf={size}"
        status, headers, body = http.get_answer(target)
        return target, status, headers, body

    compared = 0
    try:
        with ThreadPoolExecutor(8, thread_name_prefix="views") as pool:
            for digest, (target, status, headers, body) in _ahead(pool, fetch, digests):
                compared += 1
                if progress is not None:
                    progress("compare views", compared, total)
                if status != 200:
                    report.failures.append(
                        Failure("views", f"{target} answered {status}", run=digest)
                    )
                    continue
                if check_answer is not None:
                    problem = check_answer(target, headers, body)
                    if problem is not None:
                        report.failures.append(Failure("signed answers", problem, run=digest))
                    else:
                        report.answersSigned += 1
                # As JSON would carry it, the server's way: ``to_builtins`` keeps tuples
                # (a rerun's samples), which would never equal the server's lists.
                local = _DEC.decode(_ENC.encode(show_run(conn, store, digest, size, size=size)))
                try:
                    remote = _DEC.decode(body)
                except msgspec.DecodeError:
                    report.failures.append(Failure("views", f"{target} is not JSON", run=digest))
                    continue
                diff = first_difference(remote, local)
                if diff is not None:
                    path, theirs, ours = diff
                    report.failures.append(
                        Failure(
                            "views",
                            f"run {digest}: the server says {path} = {_short(theirs)}, the "
                            f"replay says {_short(ours)}",
                            run=digest,
                            field=path,
                        )
                    )
    except SourceError as exc:
        report.failures.append(Failure("views", exc.detail))
    finally:
        http.close()
    report.runsCompared = compared
    report.phases.append(Phase("compare views", compared, time.perf_counter() - started))


def _ahead(
    pool: ThreadPoolExecutor,
    fetch: Callable[[str], tuple[str, int, Any, bytes]],
    digests: Iterable[str],
    window: int = AHEAD,
) -> Iterator[tuple[str, tuple[str, int, Any, bytes]]]:
    """Each digest with its fetched answer, in order, at most ``window`` fetches ahead of the
    caller (``pool.map`` would fetch every run at once and hold every answer)."""
    pending: deque[tuple[str, Future[tuple[str, int, Any, bytes]]]] = deque()
    for digest in digests:
        pending.append((digest, pool.submit(fetch, digest)))
        if len(pending) >= window:
            first, future = pending.popleft()
            yield first, future.result()
    while pending:
        first, future = pending.popleft()
        yield first, future.result()


def _short(value: Any) -> str:
    if value is ABSENT:
        return "nothing"
    text = _ENC.encode(value).decode()
    return text if len(text) <= 80 else text[:77] + "…"

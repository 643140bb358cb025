"""Issue 27: the peer library. ``eventsourcing`` (the Python event-sourcing library, pinned in the
test extras, never used by the service) saves events to SQLite in the same run as ours:

- single-event saves from 16 threads (one aggregate, one event, one ``save`` each), against our
  durable single attestation posts over HTTP (``attest_posts_per_s`` of the ``attest`` section,
  each verified, signed into the log and committed before its answer), and against our durable
  single appends from 16 threads in process (``Ledger.append`` of one event: the group commit);
- batched saves (``BATCH`` aggregates in one ``save``, one transaction) against our batched
  appends (``Ledger.append`` of ``BATCH`` events: each signed, hashed into the tree, projected,
  with a signed checkpoint, in one transaction).

Both write a file of their own in a fresh folder. Ours commits with ``synchronous=FULL``;
eventsourcing's SQLite recorder keeps SQLite's own default, which is FULL too (its reading is
printed). The events are about the same size (a ~900-byte text). Rounds alternate which library
goes first; the medians are reported.

Targets: single appends >= 2 x its single-event saves; batched >= 1.0 x its batched saves."""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event

from events.types import ReportFiled
from service.core.init import init_data_dir
from tests.bench.common import line, record, recorded

THREADS = 16
SINGLE = int(os.environ.get("BENCH_PEER_SINGLE", "3000"))
BATCHED = int(os.environ.get("BENCH_PEER_BATCHED", "20000"))
BATCH = 1000
ROUNDS = int(os.environ.get("BENCH_PEER_ROUNDS", "3"))
RUN = "sha256:" + "cd" * 32
TEXT = "z" * 900


class Note(Aggregate):
    """The peer's aggregate: one event, a ~900-byte text."""

    @event("Written")
    def __init__(self, text: str) -> None:
        self.text = text


def _threads(n: int, one: Callable[[int], None]) -> float:
    """Calls of ``one(i)`` for ``i`` in ``range(n)`` per second, from ``THREADS`` threads."""
    counter = iter(range(n))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            one(i)

    workers = [threading.Thread(target=work) for _ in range(THREADS)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return n / (time.perf_counter() - t0)


def _theirs(folder: Path) -> tuple[float, float, str]:
    """eventsourcing: single saves/s from ``THREADS`` threads, batched saves/s, and its
    connection's ``PRAGMA synchronous``."""

    def app(name: str) -> Application:
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / name)}
        return Application(env=env)

    single = app("single.db")
    single_rate = _threads(SINGLE, lambda i: single.save(Note(f"{i:09d} {TEXT}")))
    datastore = single.recorder.datastore  # type: ignore[attr-defined]
    with datastore.transaction(commit=False) as cursor:
        cursor.execute("PRAGMA synchronous")
        synchronous = str(cursor.fetchone()[0])
    single.close()
    batched = app("batched.db")
    notes = [Note(f"{i:09d} {TEXT}") for i in range(BATCHED)]
    t0 = time.perf_counter()
    for start in range(0, BATCHED, BATCH):
        batched.save(*notes[start : start + BATCH])
    batched_rate = BATCHED / (time.perf_counter() - t0)
    batched.close()
    return single_rate, batched_rate, synchronous


def _ours(folder: Path) -> tuple[float, float]:
    """Ours: durable single appends/s from ``THREADS`` threads (group commit), and batched."""
    single, _ = init_data_dir(folder / "single")
    with single:
        single_rate = _threads(
            SINGLE,
            lambda i: single.append(
                [(ReportFiled(runDigest=RUN, category="bench", text=f"{i:09d} {TEXT}"), RUN)]
            ),
        )
    batched, _ = init_data_dir(folder / "batched")
    events = [
        (ReportFiled(runDigest=RUN, category="bench", text=f"{i:09d} {TEXT}"), RUN)
        for i in range(BATCHED)
    ]
    with batched:
        t0 = time.perf_counter()
        for start in range(0, BATCHED, BATCH):
            batched.append(events[start : start + BATCH])
        batched_rate = BATCHED / (time.perf_counter() - t0)
    return single_rate, batched_rate


def main() -> None:
    print(
        f"peer (issue 27): eventsourcing on SQLite beside our log, {THREADS} threads for single"
        f" saves, batches of {BATCH:,}; {ROUNDS} rounds, medians"
    )
    theirs: list[tuple[float, float, str]] = []
    ours: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(ROUNDS):
            folder = Path(tmp) / str(r)
            folder.mkdir()
            if r % 2 == 0:
                theirs.append(_theirs(folder))
                ours.append(_ours(folder))
            else:
                ours.append(_ours(folder))
                theirs.append(_theirs(folder))
    their_single = statistics.median(t[0] for t in theirs)
    their_batched = statistics.median(t[1] for t in theirs)
    our_single = statistics.median(o[0] for o in ours)
    our_batched = statistics.median(o[1] for o in ours)
    batched_ratio = statistics.median(o[1] / t[1] for o, t in zip(ours, theirs, strict=True))
    line(
        f"eventsourcing: single-event saves, {THREADS} threads",
        their_single,
        "saves/s",
        f"PRAGMA synchronous={theirs[0][2]} (2 = FULL)",
    )
    line(f"eventsourcing: batched saves, {BATCH:,} a save", their_batched, "events/s")
    line(f"ours: durable single appends, {THREADS} threads in process", our_single, "appends/s")
    line("  ratio to eventsourcing's single saves", our_single / their_single, "x")
    line(f"ours: batched appends, {BATCH:,} a batch (signed, projected)", our_batched, "entries/s")
    line("  ratio to eventsourcing's batched saves (target >= 1.0)", batched_ratio, "x")
    posts = recorded("attest_posts_per_s")
    if posts is None:
        single_ratio, what = our_single / their_single, "in-process single appends"
        print("  (the attest section did not run: the single ratio is of in-process appends)")
    else:
        single_ratio, what = posts / their_single, "durable attestation posts over HTTP"
        line("ours: durable attestation posts (attest section)", posts, "/s")
        line("  ratio to eventsourcing's single saves (target >= 2)", single_ratio, "x")
    record(
        "append_ratio_to_eventsourcing_single",
        single_ratio,
        "x",
        f"our {what} over eventsourcing's single-event saves from {THREADS} threads (SQLite)",
        eventsourcing_saves_per_s=round(their_single, 1),
        in_process_appends_per_s=round(our_single, 1),
    )
    record(
        "append_ratio_to_eventsourcing_batched",
        batched_ratio,
        "x",
        f"our batched appends over eventsourcing's batched saves, {BATCH:,} a batch (SQLite)",
        eventsourcing_events_per_s=round(their_batched, 1),
        our_entries_per_s=round(our_batched, 1),
    )

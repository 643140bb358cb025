"""``benchproof audit``: check a remote log from its C2SP tiles, replay it and hold the server's
answers against the replay.

1. The checkpoint: fetched and opened with the log key the auditor holds (``--log-key``).
2. Consistency: the last checkpoint this auditor verified (``--state``) must be a prefix of the
   new tree: the root of the new tree's first ``size`` entries, recomputed from the tiles, must
   be the remembered root (a rewritten past or a fork fails, naming both checkpoints).
3. The log: every entry bundle and hash tile of the checkpoint's tree, fetched in parallel (and
   kept in a cache folder, so an interrupted audit resumes), checked by ``benchproof verify``'s
   own code (``verifier.log``) through a ``LogReader`` over the fetched tiles: each
   leaf against its level-0 tile, every signature against the key valid at its position, the
   tree against the hash tiles of every level and against the checkpoints.
4. Replay: the leaves go into a scratch store (``append_leaves``, which recomputes the tree
   again) and every projection is rebuilt there from position 0.
5. Views: for every run (or a sample), the server's dossier as of the audited size must equal
   the replay's, field by field (the view, its evidence level, its rank and its group's
   leader); a signed answer's signature must verify with the log key.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

from events.bulk import paused_gc
from events.errors import EventError, LogError
from events.merkle import CompactRange
from events.port import EntryHeader, EntryRow, SignedCheckpoint, stored_entries
from events.stores.sqlite import SqliteLog
from keys import NoteVerifier
from projections import queries
from projections.materialize import Materializer
from projections.shards import Unshardable, open_rebuilt, rebuild_sharded
from service.app.runs import show_run
from service.errors import UsageError
from verifier.answers import ABSENT, first_difference
from verifier.log import verify_log
from verifier.tiles import (
    FetchedCheckpoint,
    HttpSource,
    LeafStream,
    SourceError,
    SourceInvalid,
    TileSource,
    fetch_checkpoint,
    fetch_upper_tiles,
    open_checkpoint,
)

__all__ = ["AuditReport", "Failure", "audit"]

_PARALLEL_FROM = 20_000
_WORKERS = 2
_ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder()


class Failure(msgspec.Struct, frozen=True, omit_defaults=True):
    """One thing the audit found wrong: which check, what, and where (an entry's position, a
    run's digest and the field that differs)."""

    check: str
    detail: str
    position: int | None = None
    run: str | None = None
    field: str | None = None


class Remembered(msgspec.Struct, frozen=True):
    """What ``--state`` keeps: the last checkpoint this auditor verified."""

    origin: str
    size: int
    root: str  # hex
    note: str  # the signed note, as served


class Phase(msgspec.Struct):
    name: str
    items: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else 0.0


class AuditReport(msgspec.Struct):
    server: str
    origin: str
    treeSize: int = 0
    root: str = ""
    previous: Remembered | None = None
    entries: int = 0
    fetched: int = 0
    runsCompared: int = 0
    answersSigned: int = 0
    phases: list[Phase] = []
    checked: list[str] = []  # the checks that ran (a failed one is also in ``failures``)
    failures: list[Failure] = []

    @property
    def ok(self) -> bool:
        return not self.failures


class FetchedLog:
    """A ``LogReader`` over a log read through its tiles, for ``verify_log``: rows stream from the
    entry bundles (each leaf's stored hash is its level-0 tile's hash; no columns stand beside
    the leaf), the tree nodes are those of the hash tiles of level 1 and up (tree levels 8,
    16, …), and the checkpoints are the one fetched and the one remembered.
    ``watched``: the root of the first ``watch`` entries, from the served level-0 hashes (the
    verifier checks them against the leaves)."""

    def __init__(
        self,
        origin: str,
        stream: LeafStream,
        upper: dict[tuple[int, int], bytes],
        checkpoints: Sequence[SignedCheckpoint],
        watch: int | None = None,
    ) -> None:
        self._origin = origin
        self._stream = stream
        self._upper = upper
        self._checkpoints = sorted(checkpoints, key=lambda c: c.size)
        self._watch = watch
        self.watched: bytes | None = None

    @property
    def origin(self) -> str:
        return self._origin

    @property
    def size(self) -> int:
        return self._stream.size

    def refresh(self) -> int:
        return self._stream.size

    def rows(self, start: int = 0, end: int | None = None) -> Iterator[EntryRow]:
        watch = self._watch
        edge = CompactRange() if watch is not None else None
        for bundle in self._stream:
            position = bundle.start
            for leaf, served in zip(bundle.leaves, bundle.hashes, strict=True):
                if edge is not None and watch is not None and position < watch:
                    edge.append(served)
                    if edge.size == watch:
                        self.watched = edge.root()
                yield EntryRow(position, "", "", "", "", served, leaf)
                position += 1

    def nodes(self) -> Iterator[tuple[int, int, bytes]]:
        for (level, index), h in self._upper.items():
            yield level, index, h

    def checkpoints(self) -> Iterator[SignedCheckpoint]:
        return iter(self._checkpoints)

    def latest_checkpoint(self) -> SignedCheckpoint | None:
        return self._checkpoints[-1] if self._checkpoints else None

    # What the verifier does not read: a fetched log answers only the above.
    def _absent(self, what: str) -> LogError:
        return LogError(f"a log read through its tiles does not answer {what}")

    def leaves(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        raise self._absent("leaves")

    def leaf(self, seq: int) -> bytes | None:
        raise self._absent("single leaves")

    def headers(self, start: int = 0, end: int | None = None) -> Iterator[EntryHeader]:
        raise self._absent("headers")

    def headers_at(self, positions: Sequence[int]) -> dict[int, EntryHeader]:
        raise self._absent("headers")

    def read_node(self, level: int, index: int) -> bytes:
        raise self._absent("tree nodes")

    def node_range(self, level: int, start: int, end: int) -> list[bytes]:
        raise self._absent("tree nodes")

    def root(self, size: int | None = None) -> bytes:
        raise self._absent("roots")

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        raise self._absent("proofs")

    def consistency_proof(self, old: int, new: int) -> list[bytes]:
        raise self._absent("proofs")

    def checkpoint(self, size: int) -> SignedCheckpoint | None:
        return next((c for c in self._checkpoints if c.size == size), None)

    def checkpoint_at_or_below(self, size: int) -> SignedCheckpoint | None:
        below = [c for c in self._checkpoints if c.size <= size]
        return below[-1] if below else None

    def checkpoint_at_instant(self, instant: str) -> SignedCheckpoint | None:
        raise self._absent("checkpoints by instant")

    def size_at_instant(self, instant: str) -> int:
        raise self._absent("sizes by instant")

    def find(self, digests: Sequence[str]) -> dict[str, int]:
        raise self._absent("payload digests")

    def close(self) -> None:
        pass


def load_state(path: Path | None, origin: str) -> Remembered | None:
    """The remembered checkpoint, if the state file exists.

    Raises:
        UsageError: the file is not an audit state, or is of another log.
    """
    if path is None or not path.exists():
        return None
    try:
        state = msgspec.json.decode(path.read_bytes(), type=Remembered)
    except (OSError, msgspec.DecodeError) as exc:
        raise UsageError(f"{path} is not an audit state file: {exc}") from None
    if state.origin != origin:
        raise UsageError(f"{path} remembers the log {state.origin}, not {origin}")
    return state


def save_state(path: Path, fetched: FetchedCheckpoint) -> None:
    state = Remembered(
        fetched.body.origin,
        fetched.body.size,
        fetched.body.root.hex(),
        fetched.checkpoint.note.decode(),
    )
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(state)) + b"\n")
    tmp.replace(path)


def audit(
    server: str,
    log_key: NoteVerifier,
    *,
    state: Path | None = None,
    sample: int | None = None,
    seed: int | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
    source: TileSource | None = None,
    check_answer: Callable[[str, Any, bytes], str | None] | None = None,
    replay: bool = True,
) -> AuditReport:
    """Audit the log served at ``server`` (see the module's text). ``replay=False``: the fast
    path, steps 1 to 3 only (the checkpoint, consistency, the log: tiles, tree, signatures).

    ``progress(phase, done, total)`` is told how far each phase is. ``check_answer(target,
    headers, body)`` checks a view answer's signature (returns a failure's text, or None).

    Raises:
        SourceError: the server cannot be reached (nothing was audited).
        UsageError: the state file is not one, or is of another log.
    """
    server = server.rstrip("/")
    report = AuditReport(server, log_key.name)
    remembered = load_state(state, log_key.name)
    report.previous = remembered
    src = source if source is not None else HttpSource(server)
    with contextlib.ExitStack() as stack:
        stack.callback(src.close)
        if state is not None:
            cache = state.with_name(state.name + ".tiles")
        else:
            cache = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bp-audit-")))
        try:
            fetched = fetch_checkpoint(src, log_key)
        except SourceInvalid as exc:
            report.failures.append(Failure("checkpoint", exc.detail))
            return report
        report.checked.append("checkpoint")
        size = fetched.body.size
        report.treeSize, report.root = size, fetched.body.root.hex()
        if remembered is not None:
            report.checked.append("consistency")
            if not _previous_ok(report, remembered, fetched, log_key):
                return report
        if not _fetch_and_verify(report, src, fetched, remembered, cache, progress):
            return report
        if state is not None:
            save_state(state, fetched)
        if not replay:
            return report
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bp-replay-")))
        store = _replay(report, src, fetched, cache, scratch, progress)
        if store is None:
            return report
        stack.callback(store.close)
        _compare(report, server, store, size, sample, seed, progress, check_answer)
    return report


def _previous_ok(
    report: AuditReport, remembered: Remembered, fetched: FetchedCheckpoint, key: NoteVerifier
) -> bool:
    """The remembered checkpoint must still verify and not be ahead of the new one."""
    try:
        old = open_checkpoint(remembered.note.encode(), key, "the state file")
    except SourceInvalid as exc:
        report.failures.append(Failure("state", exc.detail))
        return False
    if old.body.size != remembered.size or old.body.root.hex() != remembered.root:
        report.failures.append(Failure("state", "the state file's note is not its checkpoint"))
        return False
    if fetched.body.size == remembered.size and fetched.body.root.hex() != remembered.root:
        report.failures.append(
            Failure(
                "consistency",
                f"the server's checkpoint (size {fetched.body.size}, root "
                f"{fetched.body.root.hex()}) signs another tree of the same size as the one "
                f"verified before (size {remembered.size}, root {remembered.root}): the log forked",
            )
        )
        return False
    if fetched.body.size < remembered.size:
        report.failures.append(
            Failure(
                "consistency",
                f"the server's checkpoint (size {fetched.body.size}, root "
                f"{fetched.body.root.hex()}) is smaller than the one verified before (size "
                f"{remembered.size}, root {remembered.root}): the log was rolled back",
            )
        )
        return False
    return True


def _fetch_and_verify(
    report: AuditReport,
    src: TileSource,
    fetched: FetchedCheckpoint,
    remembered: Remembered | None,
    cache: Path,
    progress: Callable[[str, int, int | None], None] | None,
) -> bool:
    size = fetched.body.size
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress("fetch and verify", done[0], size)

    started = time.perf_counter()
    stream = LeafStream(src, size, cache=cache, progress=tick)
    checkpoints = [fetched.checkpoint]
    watch = None
    if remembered is not None and remembered.size < size:
        watch = remembered.size
        old_root = bytes.fromhex(remembered.root)
        checkpoints.insert(0, SignedCheckpoint(watch, remembered.note.encode(), old_root, ""))
    report.checked.append("tiles")
    try:
        upper = fetch_upper_tiles(src, size)
        log = FetchedLog(fetched.body.origin, stream, upper, checkpoints, watch)
        verified = verify_log(log, node_stride=8, stored_columns=False)
    except (SourceInvalid, SourceError) as exc:
        # Once its checkpoint verified, a server that does not serve its own tiles fails the
        # audit (exit 1), whatever it answers instead.
        report.failures.append(Failure("tiles", exc.detail))
        shutil.rmtree(cache, ignore_errors=True)  # what a lying server served is not kept
        return False
    report.fetched = stream.fetched
    report.entries = verified.entries
    report.checked.extend(("tree", "signatures", "log"))
    report.phases.append(Phase("fetch and verify", size, time.perf_counter() - started))
    if watch is not None and remembered is not None and log.watched != old_root:
        report.failures.append(
            Failure(
                "consistency",
                f"the server's checkpoint (size {size}, root {fetched.body.root.hex()}) is not "
                f"consistent with the one verified before (size {remembered.size}, root "
                f"{remembered.root}): the log's past was rewritten",
            )
        )
    if (
        remembered is not None
        and verified.findings
        and not any(f.check == "consistency" for f in report.failures)
    ):
        # The tiles of the remembered tree may come from the cache (verified then): a new
        # checkpoint whose root the leaves do not make may be a rewritten past as much as a
        # lying tile, and the auditor is told which checkpoints are at stake.
        root_failed = any(
            f"checkpoint at size {size}:" in f.reason and "root" in f.reason
            for f in verified.findings
        )
        if root_failed:
            report.failures.append(
                Failure(
                    "consistency",
                    f"the server's checkpoint (size {size}, root {fetched.body.root.hex()}) is "
                    "not the root of the remembered tree's leaves and what follows them: it "
                    f"does not extend the one verified before (size {remembered.size}, root "
                    f"{remembered.root}), or its tiles lie",
                )
            )
    for finding in verified.findings:
        reason = finding.reason
        check = "signatures" if "sign" in reason or "key" in reason else "log"
        if "tree node" in reason or "root" in reason or "leaf hash" in reason:
            check = "tree"
        position = finding.position if finding.position < 2**62 else None
        report.failures.append(Failure(check, reason, position=position))
    if not report.ok:
        shutil.rmtree(cache, ignore_errors=True)
    return report.ok


def _replay(
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
    leaves: list[bytes] = []
    try:
        for bundle in LeafStream(src, size, cache=cache):
            leaves.extend(bundle.leaves)
    except (SourceInvalid, SourceError) as exc:
        shutil.rmtree(cache, ignore_errors=True)
        report.failures.append(Failure("replay", exc.detail))
        return None
    db = scratch / "replay.db"
    store = SqliteLog.open(db, origin=fetched.body.origin, create=True)
    try:
        with paused_gc():
            store.append_leaves(0, leaves, fetched.checkpoint)
        del leaves
        if progress is not None:
            progress("replay", 0, size)
        with store.transaction():
            materializer = Materializer(store.session)
            if size >= _PARALLEL_FROM:
                (scratch / "shards").mkdir()
                try:
                    paths = rebuild_sharded(db, size, scratch / "shards", workers=_WORKERS)
                except Unshardable:
                    materializer.rebuild(stored_entries(store, 0, size))
                else:
                    rebuilt, schemas = open_rebuilt(paths)
                    try:
                        materializer.replace_with(rebuilt, schemas)
                    finally:
                        rebuilt.close()
            else:
                materializer.rebuild(stored_entries(store, 0, size))
    except (LogError, EventError) as exc:
        store.close()
        report.failures.append(Failure("replay", str(exc)))
        return None
    if progress is not None:
        progress("replay", size, size)
    report.phases.append(Phase("replay", size, time.perf_counter() - started))
    return store


def _compare(
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
    digests = queries.run_digests(conn, size)
    if sample is not None and sample < len(digests):
        # Unpredictable unless the auditor names a seed (to repeat a sample): a server that
        # knew the sample could lie about the other runs.
        chooser = random.SystemRandom() if seed is None else random.Random(seed)  # noqa: S311
        digests = sorted(chooser.sample(digests, sample))
    http = HttpSource(server, connections=8)

    def fetch(digest: str) -> tuple[str, int, Any, bytes]:
        target = f"/v1/runs/{digest}?asOf={size}"
        status, headers, body = http.get_answer(target)
        return target, status, headers, body

    compared = 0
    try:
        with ThreadPoolExecutor(8, thread_name_prefix="views") as pool:
            for digest, (target, status, headers, body) in zip(
                digests, pool.map(fetch, digests), strict=True
            ):
                compared += 1
                if progress is not None:
                    progress("compare views", compared, len(digests))
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


def _short(value: Any) -> str:
    if value is ABSENT:
        return "nothing"
    text = _ENC.encode(value).decode()
    return text if len(text) <= 80 else text[:77] + "…"

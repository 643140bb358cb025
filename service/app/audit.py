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
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from events.port import SignedCheckpoint
from keys import NoteVerifier
from keys.cosignatures import WitnessVerifier
from keys.errors import MalformedNote
from service.app.auditlog import FetchedLog
from service.app.auditreplay import compare_views, replay_leaves
from service.app.auditreport import AuditReport, Failure, Phase, Remembered, load_state, save_state
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
from verifier.witnessing import QuorumNotMet, count_witnesses

__all__ = ["AuditReport", "Failure", "audit"]


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
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> AuditReport:
    """Audit the log served at ``server`` (see the module's text). ``replay=False``: the fast
    path, steps 1 to 3 only (the checkpoint, consistency, the log: tiles, tree, signatures).
    ``witnesses``: the audit fails (``witnesses``) unless at least ``quorum`` of them (default:
    all) cosigned the checkpoint it audits.

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
        _count_witnesses(report, fetched, log_key, witnesses, quorum)
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
        store = replay_leaves(report, src, fetched, cache, scratch, progress)
        if store is None:
            return report
        stack.callback(store.close)
        compare_views(report, server, store, size, sample, seed, progress, check_answer)
    return report


def _count_witnesses(
    report: AuditReport,
    fetched: FetchedCheckpoint,
    log_key: NoteVerifier,
    witnesses: Sequence[WitnessVerifier],
    quorum: int | None,
) -> None:
    """The cosignatures on the audited checkpoint: how many lines besides the log's, and which
    of ``witnesses`` cosigned it (too few is the failure ``witnesses``; the audit goes on)."""
    if witnesses:
        report.checked.append("witnesses")
    try:
        witnessed = count_witnesses(fetched.checkpoint.note, log_key, witnesses, quorum)
    except QuorumNotMet as exc:
        report.cosignaturesSeen = int(exc.details["seen"])  # type: ignore[call-overload]
        report.failures.append(Failure("witnesses", str(exc)))
        return
    except MalformedNote as exc:
        report.failures.append(Failure("witnesses", str(exc)))
        return
    report.cosignaturesSeen = witnessed.seen
    report.witnessesCosigned = list(witnessed.cosigned)


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

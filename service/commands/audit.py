"""``benchproof audit --server URL --log-key VKEY [--state FILE] [--sample N] [--json]``: fetch a
remote log through its tiles, verify it, replay it and compare the server's views with the
replay (``service.app.audit``). Exit 0 when everything holds, 1 when anything does not."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import msgspec

from keys.notekeys import NoteVerifier
from service.app.audit import AuditReport, audit
from service.commands.base import (
    Sub,
    add_log_key,
    add_witness_options,
    local_path,
    read_log_key,
    read_witnesses,
)
from service.console.progress import Progress
from verifier.answers import check_headers

__all__ = ["register"]


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "audit",
        parents=[common],
        help="fetch, verify and replay a remote log; compare its views with the replay",
    )
    p.add_argument("--server", required=True, metavar="URL", help="the log's server")
    add_log_key(p)
    add_witness_options(p)
    p.add_argument(
        "--state",
        type=local_path,
        metavar="FILE",
        help="remember the verified checkpoint here and prove the next one consistent with it "
        "(fetched tiles are kept beside it, in FILE.tiles, so an audit resumes)",
    )
    p.add_argument(
        "--sample", type=_positive, metavar="N", help="compare the views of N random runs only"
    )
    p.add_argument("--seed", type=int, help="with --sample: repeat the sample this seed draws")
    p.add_argument(
        "--no-replay",
        action="store_true",
        help="the fast path: check the checkpoint, consistency, tiles, tree and every signature, "
        "but neither replay nor compare views",
    )
    p.add_argument("--json", action="store_true", help="the report as one JSON object")
    p.set_defaults(handler=_audit)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


class _Bars:
    """One progress bar per phase, on stderr when it is a terminal."""

    def __init__(self) -> None:
        self.bar: Progress | None = None
        self.phase = ""

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if phase != self.phase:
            self.close()
            self.phase = phase
            self.bar = Progress(phase, total=total)
        assert self.bar is not None  # noqa: S101 - set just above
        self.bar.advance(done - self.bar.done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__()
            if self.bar.enabled and self.bar.done:
                sys.stderr.write("\n")
            self.bar = None


def _audit(args: argparse.Namespace) -> int:
    key = read_log_key(args.log_key)
    witnesses, quorum = read_witnesses(args)
    bars = _Bars()
    check = _answer_checker(key)
    try:
        report = audit(
            args.server,
            key,
            state=args.state,
            sample=args.sample,
            seed=args.seed,
            progress=bars,
            check_answer=check,
            replay=not args.no_replay,
            witnesses=witnesses,
            quorum=quorum,
        )
    finally:
        bars.close()
    if args.json:
        sys.stdout.buffer.write(msgspec.json.encode(_as_json(report)) + b"\n")
    else:
        sys.stdout.write(summary(report))
    return 0 if report.ok else 1


def _answer_checker(key: NoteVerifier) -> Callable[[str, Any, bytes], str | None]:
    """The check of a view answer's signature by the log key (``verifier.answers``)."""

    def check(target: str, headers: Any, body: bytes) -> str | None:
        return check_headers(key, key.name, target, headers, body)

    return check


def _as_json(report: AuditReport) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(report)
    out["ok"] = report.ok
    out["phases"] = [
        {"name": p.name, "items": p.items, "seconds": round(p.seconds, 3), "perSecond": p.rate}
        for p in report.phases
    ]
    return out


def summary(report: AuditReport) -> str:
    """The report as a table for a person."""
    lines = [
        f"audit of {report.server} ({report.origin})",
        f"  checkpoint      size {report.treeSize:,}, root {report.root[:16]}…",
    ]
    if report.previous is not None:
        lines.append(
            f"  previous        size {report.previous.size:,}, root {report.previous.root[:16]}…"
        )
    lines.append(f"  entries         {report.entries:,} verified ({report.fetched:,} fetched)")
    lines.append(f"  views compared  {report.runsCompared:,} runs, {report.answersSigned:,} signed")
    cosigned = ", ".join(report.witnessesCosigned) or "none of those given"
    lines.append(
        f"  cosignatures    {report.cosignaturesSeen} on the checkpoint"
        + (f"; verified: {cosigned}" if "witnesses" in report.checked else " (not checked)")
    )
    for phase in report.phases:
        lines.append(
            f"  {phase.name:<15} {phase.seconds:8.2f} s  {phase.rate:12,.0f} /s ({phase.items:,})"
        )
    checks = (
        "checkpoint",
        "witnesses",
        "consistency",
        "tiles",
        "tree",
        "signatures",
        "log",
        "replay",
    )
    failed = {f.check for f in report.failures}
    for name in (*checks, "views", "signed answers"):
        status = "FAILED" if name in failed else "ok" if name in report.checked else "not run"
        lines.append(f"  {name:<15} {status}")
    for f in report.failures[:20]:
        where = f" (entry {f.position})" if f.position is not None else ""
        lines.append(f"  - {f.check}: {f.detail}{where}")
    if len(report.failures) > 20:
        lines.append(f"  … and {len(report.failures) - 20} more")
    lines.append("audit passed" if report.ok else "audit FAILED")
    return "\n".join(lines) + "\n"

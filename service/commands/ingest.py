"""``benchproof ingest SOURCE PATH...``: import what a source publishes into the signed log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from service.app.ingest import ingest
from service.commands.base import Sub, local_path
from service.console.progress import Progress
from service.core.ledger import open_log
from service.ingest.api import SOURCES


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "ingest",
        parents=[common],
        help="import manifests or a source's files into the log",
        description=(
            "Import into the signed log. SOURCE is one of: " + ", ".join(SOURCES) + ". "
            "A PATH may be a file or a folder (walked for the source's files). Invalid input is "
            "refused whole (exit 2, nothing appended) unless --skip-invalid; what the log "
            "already holds is not appended again."
        ),
    )
    p.add_argument("source", choices=list(SOURCES), metavar="SOURCE", help=" | ".join(SOURCES))
    p.add_argument("paths", nargs="+", type=local_path, metavar="PATH")
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="append the valid rows; write the rejected ones to --rejected",
    )
    p.add_argument(
        "--rejected",
        type=local_path,
        default=Path("rejected.jsonl"),
        metavar="FILE",
        help="where --skip-invalid writes rejected rows with reasons (default: rejected.jsonl)",
    )
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    with (
        open_log(args.data) as ledger,
        Progress(f"ingest {args.source}: entries written") as bar,
    ):
        bar.note(f"reading and checking {', '.join(map(str, args.paths))}…")
        result, rejected = ingest(
            ledger,
            args.source,
            args.paths,
            skip_invalid=args.skip_invalid,
            rejected_file=args.rejected,
            progress=bar.advance,
            expect=bar.expect,
        )
    if rejected:
        sys.stderr.write(
            f"benchproof: {len(rejected)} invalid rows skipped; written with reasons to {args.rejected}\n"
        )
    sys.stdout.write(result.summary() + "\n")
    return 0

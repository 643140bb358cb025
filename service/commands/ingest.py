"""``benchproof ingest SOURCE PATH...``: import what a source publishes into the signed log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from service.commands.base import Sub
from service.ingest import core
from service.ingest import manifests as manifest_importer
from service.ledger import Ledger

SOURCES = {"manifest": manifest_importer}


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "ingest",
        parents=[common],
        help="import manifests or a source's files into the log",
        description=(
            "Import into the signed log. SOURCE is one of: " + ", ".join(SOURCES) + ". "
            "A PATH may be a file or a folder (walked for the source's files). Invalid input is "
            "refused whole (exit 2, nothing appended); what the log already holds is not appended again."
        ),
    )
    p.add_argument(
        "source", choices=sorted(SOURCES), metavar="SOURCE", help=" | ".join(sorted(SOURCES))
    )
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    importer = SOURCES[args.source]
    plan = importer.plan(args.paths)
    with Ledger.open(args.data) as ledger:
        result = core.commit(ledger, plan)
    sys.stdout.write(result.summary() + "\n")
    return 0

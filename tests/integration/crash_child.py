"""Appends batches of 40 reports forever (until killed); subjects name the batch."""

from __future__ import annotations

import sys
from pathlib import Path

from events.types import ReportFiled
from service.core.ledger import Ledger

BATCH = 40
RUN = "sha256:" + "cd" * 32


def main() -> None:
    with Ledger.open(Path(sys.argv[1])) as ledger:
        n = ledger.store.session.execute(
            "SELECT count(DISTINCT subject) FROM entries WHERE subject LIKE 'batch-%'"
        ).fetchone()[0]
        print("ready", flush=True)
        while True:
            ledger.append(
                [
                    (
                        ReportFiled(runDigest=RUN, category="crash", text=f"batch {n} item {i}"),
                        f"batch-{n}",
                    )
                    for i in range(BATCH)
                ]
            )
            n += 1


if __name__ == "__main__":
    main()

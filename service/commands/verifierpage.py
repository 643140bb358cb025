"""``benchproof verifier OUT.html``: write the offline verifier page, one self-contained HTML file
that checks citation receipts and saved signed answers in a browser, with no network (the page
the service serves at ``/verify``)."""

from __future__ import annotations

import argparse
import sys

from service.commands.base import Sub, local_path
from service.errors import UsageError

__all__ = ["register"]


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "verifier",
        parents=[common],
        help="write the offline verifier page (one HTML file, no network needed)",
        description=(
            "Write one self-contained HTML file that checks a citation receipt or a saved"
            " signed answer with the log's vkey (and witness vkeys), offline, in a browser."
        ),
    )
    p.add_argument("out", type=local_path, metavar="OUT", help="the HTML file to write")
    p.set_defaults(handler=_write)


def _write(args: argparse.Namespace) -> int:
    from service.verifierpage.page import page_html

    page = page_html()
    try:
        args.out.write_bytes(page)
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror}") from None
    sys.stdout.write(
        f"wrote the offline verifier page to {args.out} ({len(page)} bytes): open it in a browser\n"
    )
    return 0

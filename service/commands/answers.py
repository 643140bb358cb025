"""``benchproof verify-answer FILE --log-key VKEY [--data DIR]``: check a saved answer (what
``runs show --server URL --json`` prints) offline with the log's vkey, and with ``--data``
against the answer the local log gives at the same tree size. Exit 0 when it holds, 1 when the
signature or the comparison fails (one line naming it), 2 on bad input."""

from __future__ import annotations

import argparse
import sys

from service.app.answers import verify_saved
from service.commands.base import (
    Sub,
    add_log_key,
    add_witness_options,
    local_path,
    read_file,
    read_log_key,
    read_witnesses,
)
from service.errors import UsageError
from verifier.answers import AnswerInvalid, decode_saved

__all__ = ["register"]


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    # Not the common ``--data`` (which defaults to $BENCHPROOF_DATA or ./var): here it names the
    # log to recompute the answer from, so it is used only when given on this command.
    del common
    v = sub.add_parser(
        "verify-answer",
        help="check a saved signed answer (runs show --server URL --json) against the log's key",
    )
    v.add_argument("file", type=local_path, metavar="FILE", help="the saved answer (JSON)")
    add_log_key(v)
    v.add_argument(
        "--data",
        dest="replay",
        type=local_path,
        metavar="DIR",
        help="also recompute the answer from the log in DIR (a mirror, an audit's replay) at "
        "the answer's tree size and compare",
    )
    add_witness_options(v)
    v.set_defaults(handler=_verify)


def _verify(args: argparse.Namespace) -> int:
    data = read_file(args.file)
    log_key = read_log_key(args.log_key)
    witnesses, quorum = read_witnesses(args)
    try:
        answer = decode_saved(data)
    except AnswerInvalid as exc:
        raise UsageError(f"{args.file}: {exc.detail}") from None
    replay = None
    if args.replay is not None:
        # Imported only here: the web app and its test client are for recomputing.
        from service.web.replay import replay as replay_from

        replay = replay_from(args.replay)
    try:
        checked = verify_saved(answer, log_key, replay, witnesses, quorum)
    except AnswerInvalid as exc:
        sys.stderr.write(f"benchproof: answer does not verify: {' '.join(exc.detail.split())}\n")
        return 1
    sys.stdout.write(checked.summary() + "\n")
    return 0

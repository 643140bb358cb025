"""What the subcommand modules share: typing, and the options and readers several take."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from keys import KeyringError
from keys.cosignatures import WitnessVerifier, parse_witness_vkey
from keys.notekeys import NoteVerifier, parse_vkey
from service.errors import UsageError

if TYPE_CHECKING:
    Sub = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    Sub = argparse._SubParsersAction


def add_log_key(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """The ``--log-key VKEY`` option of the commands that check what a log signed."""
    parser.add_argument(
        "--log-key",
        required=True,
        type=local_path,
        metavar="VKEY",
        help=help or "a file holding the log's vkey (as `benchproof log key` prints it)",
    )


def add_witness_options(parser: argparse.ArgumentParser) -> None:
    """``--witness-key VKEYFILE`` (repeatable) and ``--quorum K``: the witnesses a reader trusts
    and how many of them must have cosigned (``verifier.witnessing``)."""
    parser.add_argument(
        "--witness-key",
        action="append",
        default=[],
        type=local_path,
        metavar="VKEYFILE",
        help="a witness's vkey file (repeatable): its cosignature must be on the checkpoint",
    )
    parser.add_argument(
        "--quorum",
        type=int,
        metavar="K",
        help="how many of the --witness-key witnesses must have cosigned (default: all)",
    )


def read_witnesses(args: argparse.Namespace) -> tuple[list[WitnessVerifier], int | None]:
    """The witness keys and quorum ``add_witness_options`` read.

    Raises:
        UsageError: a file cannot be read or holds no witness vkey, a witness is named twice,
            or the quorum is below 1 or above the witnesses given (or given without any).
    """
    witnesses: list[WitnessVerifier] = []
    for path in args.witness_key:
        try:
            witness = parse_witness_vkey(path.read_text(encoding="utf-8").strip())
        except OSError as exc:
            raise UsageError(f"cannot read --witness-key {path}: {exc.strerror}") from None
        except (KeyringError, UnicodeDecodeError) as exc:
            raise UsageError(f"--witness-key {path}: not a witness vkey: {exc}") from None
        if any(w.name == witness.name for w in witnesses):
            raise UsageError(f"--witness-key {path}: the witness {witness.name} is given twice")
        witnesses.append(witness)
    quorum = args.quorum
    if quorum is not None and not 1 <= quorum <= len(witnesses):
        raise UsageError(
            f"--quorum {quorum}: it must be between 1 and the number of --witness-key given"
            f" ({len(witnesses)})"
        )
    return witnesses, quorum


def read_log_key(path: Path) -> NoteVerifier:
    """The verifier key (C2SP vkey) in the file ``path``.

    Raises:
        UsageError: the file cannot be read, or holds no vkey.
    """
    try:
        return parse_vkey(path.read_text(encoding="utf-8").strip())
    except OSError as exc:
        raise UsageError(f"cannot read --log-key {path}: {exc.strerror}") from None
    except (KeyringError, UnicodeDecodeError) as exc:
        raise UsageError(f"--log-key {path}: not a vkey: {exc}") from None


def read_file(path: Path) -> bytes:
    """The bytes of a file named on the command line.

    Raises:
        UsageError: it cannot be read.
    """
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def position(text: str) -> int:
    """An index or tree size: a non-negative integer that fits the log's positions."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < 2**62:
        raise argparse.ArgumentTypeError(f"{text} is not a position in a log (0 to 2**62 - 1)")
    return value


def local_path(text: str) -> Path:
    """An argparse ``type`` for a path on this machine. A path names what the user chose
    (``..`` and absolute paths included: it is their machine); one holding a NUL character names
    no file at all, and is refused as a usage error (exit 2) before anything is opened."""
    if "\x00" in text:
        raise argparse.ArgumentTypeError(f"{text!r} holds a NUL character: no file has that name")
    return Path(text)


def plain(text: str, limit: int = 300) -> str:
    """``text`` without control characters, at most ``limit`` of them: words from a server or
    from anyone who posts (a report, a key's name) printed to a terminal, where an escape
    sequence could rewrite what it shows."""
    return "".join(c if c.isprintable() else "?" for c in text)[:limit]

"""C2SP ``tlog-checkpoint`` bodies: ``<origin>\\n<size>\\n<base64 root>\\n``.

The body is signed as a C2SP signed note by the log key; ``events`` builds and parses bodies, the
signer is handed in from ``keys`` by ``service``.
"""

from __future__ import annotations

import base64
import binascii

import msgspec

from events.errors import LogError

__all__ = ["Checkpoint", "checkpoint_body", "parse_checkpoint_body"]


class Checkpoint(msgspec.Struct, frozen=True):
    origin: str
    size: int
    root: bytes


def checkpoint_body(origin: str, size: int, root: bytes) -> str:
    """The checkpoint text for a tree (C2SP tlog-checkpoint, no extension lines).

    Raises:
        LogError: the origin is empty or holds a newline, or the root is not 32 bytes.
    """
    if not origin or "\n" in origin or len(root) != 32 or size < 0:
        raise LogError("a checkpoint needs a one-line origin, a size and a 32-byte root")
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


def parse_checkpoint_body(text: str) -> Checkpoint:
    """Parse a checkpoint body (the text of a verified note).

    Raises:
        LogError: the text is not a checkpoint.
    """
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "" or not lines[0]:
        raise LogError("not a checkpoint: want origin, size and root lines")
    origin, size_text, root_text = lines[0], lines[1], lines[2]
    if not (size_text.isascii() and size_text.isdigit()) or (
        size_text.startswith("0") and size_text != "0"
    ):
        raise LogError(f"not a checkpoint: bad size {size_text!r}")
    try:
        root = binascii.a2b_base64(root_text, strict_mode=True)
    except (binascii.Error, ValueError):  # ValueError: a character outside ASCII
        raise LogError("not a checkpoint: the root is not base64") from None
    if len(root) != 32:
        raise LogError("not a checkpoint: the root is not 32 bytes")
    return Checkpoint(origin, int(size_text), root)

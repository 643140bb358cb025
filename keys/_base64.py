"""Strict RFC 4648 §4 base64 for every format keys/ speaks.

``binascii.a2b_base64(strict_mode=True)`` still accepts surplus padding after a complete quantum
("QUJD=" decodes to b"ABC") and non-zero pad bits ("QR==" decodes like "QQ=="). Comparing the
input with the canonical re-encoding closes both gaps, so every byte string has exactly one
accepted encoding.
"""

from __future__ import annotations

import binascii

__all__ = ["b64decode", "b64encode"]


def b64encode(data: bytes) -> str:
    """Return the canonical padded standard base64 of ``data``. Raises nothing."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def b64decode(text: str) -> bytes:
    """Return the bytes whose canonical padded standard base64 is exactly ``text``.

    Raises:
        ValueError: ``text`` is not canonical standard base64 (callers turn this into their
            own error type, naming the field).
    """
    data = binascii.a2b_base64(text, strict_mode=True)
    if binascii.b2a_base64(data, newline=False).decode("ascii") != text:
        raise ValueError("not canonical base64")
    return data

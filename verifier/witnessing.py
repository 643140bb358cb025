"""Counting witnesses: whether a checkpoint note carries the cosignatures (C2SP
``cosignature/v1``, ``keys.cosignatures``) of at least a quorum of the witnesses a reader
trusts. What ``verify-citation``, ``verify-answer`` and ``audit`` share (``--witness-key``,
``--quorum``).

A note's signature lines are the log's (exactly one, which verifies) and any others; every line
must be well formed. Only the lines of the witnesses given are checked: each must verify (an
edited checkpoint or a forged cosignature is refused, never counted), and a witness counts
once. The lines of other keys are only counted as seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from keys import KeyringError, MalformedNote, NoteVerifier, VerificationError
from keys.cosignatures import WitnessVerifier, cosignatures
from keys.notes import parse_signature_line, split_note
from verifier.errors import VerifierError

__all__ = ["QuorumNotMet", "Witnessed", "count_witnesses"]


class QuorumNotMet(VerifierError):
    """Fewer of the given witnesses cosigned the checkpoint than the quorum asks, or a given
    witness's line does not verify; ``details["seen"]``: the lines besides the log's."""


@dataclass(frozen=True, slots=True)
class Witnessed:
    """What the witnesses said of a checkpoint: the other signature lines seen (besides the
    log's), and the names of the given witnesses whose cosignature verified."""

    seen: int
    cosigned: tuple[str, ...]
    asked: int
    quorum: int

    def summary(self) -> str:
        """One sentence for a person."""
        if not self.asked:
            return (
                f"The checkpoint carries {self.seen} cosignature line(s) besides the log's"
                " (not checked: no --witness-key given)."
            )
        names = ", ".join(self.cosigned) or "none"
        return (
            f"{len(self.cosigned)} of the {self.asked} witness(es) given cosigned the checkpoint"
            f" ({names}); the quorum asked was {self.quorum}."
        )


def count_witnesses(
    note: bytes,
    log_key: NoteVerifier,
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> Witnessed:
    """Count the given witnesses' cosignatures on ``note`` (a checkpoint note the log's key
    signed; its own line is checked by the caller). ``quorum`` defaults to every witness given.

    Raises:
        MalformedNote: a signature line is malformed, or the log's key signed no line, or
            more than one.
        QuorumNotMet: fewer than ``quorum`` of ``witnesses`` cosigned it (the detail names
            the missing ones), or a given witness's line does not verify.
    """
    _, lines = split_note(note)
    keys = [parse_signature_line(line)[:2] for line in lines]
    own = sum(1 for k in keys if k == (log_key.name, log_key.key_hash))
    if own != 1:
        raise MalformedNote(f"the checkpoint carries {own} signatures by the log's key, not one")
    seen = len(lines) - 1
    needed = len(witnesses) if quorum is None else quorum
    try:
        found = cosignatures(note, list(witnesses))
    except VerificationError as exc:
        raise QuorumNotMet(f"a witness's cosignature does not verify: {exc}", seen=seen) from None
    except (MalformedNote, KeyringError) as exc:
        raise QuorumNotMet(f"a witness's cosignature is malformed: {exc}", seen=seen) from None
    cosigned = tuple(w.name for w in witnesses if w.name in found)
    witnessed = Witnessed(seen, cosigned, len(witnesses), needed)
    if len(cosigned) < needed:
        missing = ", ".join(w.name for w in witnesses if w.name not in found)
        raise QuorumNotMet(
            f"{len(cosigned)} of the {len(witnesses)} witness(es) given cosigned the checkpoint,"
            f" fewer than the quorum of {needed}; no cosignature by {missing}",
            seen=seen,
        )
    return witnessed

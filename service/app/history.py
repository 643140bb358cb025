"""The history of a record: every entry of the log that touched a run, in log order.

An entry touched a run when it made a version of the run's view (its ingest, supersession or
retraction, a manifest it waited on, a rerun that changed its evidence), when the projections
keep it by the run (attestations and their withdrawal or hiding, reports and their resolution,
rerun requests, claims and results, notarized citations), when it superseded an earlier run by
this one, or when it moved the run in its group (its rank, the group's leader). Each entry is
shown with its position, recording time, type, signer (key name and id), what it did in words,
the evidence level after it where it changed the run's view, and links to its leaf and to its
inclusion proof in the tree of the size answered. ``asOf`` answers the history as the log stood
then: only the entries before that size.

``GET /v1/runs/{ref}/history``, the page ``/runs/{ref}/history`` and ``benchproof runs history``
all answer ``run_history``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import msgspec

from events.entries import decode_leaf, read_entry
from events.errors import LogCorrupted
from events.keyring import KeyView
from events.port import EntryHeader, LogReader, Session
from projections import queries
from projections.errors import UnknownRun
from projections.queries.history import (
    Touch,
    run_touches,
    standing_changes,
    successor_touches,
)
from projections.views import Rerun, RunView
from service.readmodel.dossier import short_id

__all__ = [
    "KINDS",
    "EntryLinks",
    "HistoryEntry",
    "HistorySheet",
    "RankMove",
    "RunHistory",
    "Signer",
    "history_sheet",
    "run_history",
]

KINDS = (
    "ingest",
    "supersession",
    "retraction",
    "supersedes",
    "reference",
    "update",
    "attestation",
    "withdrawal",
    "hiding",
    "report",
    "resolution",
    "rerun-request",
    "rerun-claim",
    "rerun-result",
    "citation",
    "evidence",
    "rank",
    "leader",
)
"""What an entry may have done to a run, in the order an entry's ``kinds`` (and the parts of
its ``event``) list them."""

_ORDER = {kind: i for i, kind in enumerate(KINDS)}


class Signer(msgspec.Struct, frozen=True, omit_defaults=True):
    """The key that signed an entry's envelope: its id, and its name as the keyring holds it
    (absent for a key the log never registered)."""

    keyId: str
    name: str | None = None


class RankMove(msgspec.Struct, frozen=True):
    """The run's dense rank in its group before and after an entry (None: not ranked)."""

    before: int | None
    after: int | None


class EntryLinks(msgspec.Struct, frozen=True):
    """Where to check an entry: its inclusion proof in the tree of the size answered, its exact
    leaf bytes, its signer's key and the run as the entry left it."""

    proof: str
    entry: str
    signer: str
    run: str


class HistoryEntry(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry that touched the run. ``event`` says in words what it did (the parts in the
    order of ``kinds``); ``evidenceLevel`` is the run's level after it, given where the entry
    made a version of the run's view; ``rank`` where it moved the run's rank."""

    position: int
    recordedAt: str
    type: str
    subject: str
    event: str
    kinds: list[str]
    signer: Signer
    links: EntryLinks
    evidenceLevel: str | None = None
    rank: RankMove | None = None


class RunHistory(msgspec.Struct, frozen=True):
    """Every entry that touched run ``runDigest`` in the tree of ``asOf`` entries, in log
    order."""

    runDigest: str
    asOf: int
    entries: list[HistoryEntry]


class HistorySheet(NamedTuple):
    """A run's history with what its page names the run by (its view as of the size read)."""

    history: RunHistory
    view: RunView


class _RowKey(msgspec.Struct):
    rowKey: str | None = None


_ROW_KEY = msgspec.json.Decoder(_RowKey)


def _row_key(log: LogReader, position: int) -> str | None:
    """The source row key the ingest entry at ``position`` names (None: none, or unreadable)."""
    leaf = log.leaf(position)
    if leaf is None:
        return None
    try:
        return _ROW_KEY.decode(read_entry(leaf, position=position).payload).rowKey
    except (msgspec.DecodeError, LogCorrupted):
        return None


def _signer(log: LogReader, position: int) -> str:
    leaf = log.leaf(position)
    if leaf is None:
        raise LogCorrupted(f"entry {position} has no leaf", position=position)
    signatures = decode_leaf(leaf, position=position).envelope.signatures
    return signatures[0].keyid if signatures else ""


def _verdict(rerun: Rerun) -> str:
    if not rerun.correctnessPassed:
        return "failed correctness"
    if not rerun.withinTolerance:
        return "outside the tolerance" + (f" ({rerun.why})" if rerun.why else "")
    return "within the tolerance"


# The touches told as a fixed phrase and the reason they carry, if any.
_WITH_REASON = {
    "withdrawal": "attestation withdrawn by its author",
    "hiding": "attestation hidden by the index",
    "rerun-request": "rerun requested",
}


class _Facts:
    """What each position did to the run, as (kind, words), gathered from every source."""

    def __init__(self, digest: str, keys: Mapping[str, KeyView]) -> None:
        self.digest = digest
        self.keys = keys
        self.by_position: dict[int, list[tuple[str, str]]] = {}
        self.levels: dict[int, str] = {}
        self.ranks: dict[int, RankMove] = {}
        self.counted_reruns: dict[int, Rerun] = {}
        self.counted_claims: set[int] = set()

    def add(self, position: int, kind: str, words: str) -> None:
        self.by_position.setdefault(position, []).append((kind, words))

    def name(self, key_id: str | None) -> str:
        key = self.keys.get(key_id or "")
        return key.name if key is not None else (key_id or "")[:12] or "an unknown key"

    def versions(self, versions: Sequence[tuple[int, RunView]], ingest: EntryHeader | None) -> None:
        """Facts of each version of the run's view (and what it says of reruns and claims)."""
        previous: RunView | None = None
        for position, view in versions:
            self.levels[position] = view.evidenceLevel
            if previous is None:
                own = (
                    ingest is not None
                    and ingest.type.startswith("run.ingested")
                    and ingest.subject == self.digest
                )
                self.add(position, "ingest" if own else "update", "ingested" if own else "recorded")
                self.add(position, "evidence", f"evidence: {view.evidenceLevel}")
            else:
                self._changes(position, previous, view)
            previous = view

    def _changes(self, position: int, old: RunView, new: RunView) -> None:
        before = len(self.by_position.get(position, ()))
        if new.supersededBy is not None and old.supersededBy is None:
            reason = f": {new.supersededReason}" if new.supersededReason else ""
            self.add(
                position, "supersession", f"superseded by {short_id(new.supersededBy)}{reason}"
            )
        if new.retractedReason is not None and old.retractedReason is None:
            self.add(position, "retraction", f"retracted: {new.retractedReason}")
        arrived = [role for role in old.unresolved if role not in new.unresolved]
        if arrived:
            self.add(position, "reference", "referenced manifest arrived: " + ", ".join(arrived))
        for rerun in new.reruns[len(old.reruns) :]:
            self.counted_reruns[position] = rerun
        if any(r.claimedSeq == position for r in new.rerunRequests):
            self.counted_claims.add(position)
        if new.evidenceLevel != old.evidenceLevel:
            self.add(position, "evidence", f"evidence: {old.evidenceLevel} → {new.evidenceLevel}")
        changed_requests = new.rerunRequests != old.rerunRequests or new.reruns != old.reruns
        if len(self.by_position.get(position, ())) == before and not changed_requests:
            self.add(position, "update", "record updated")

    def touch(self, t: Touch) -> None:
        """The facts of one touch the projections keep."""
        match t.kind:
            case "attestation":
                key = self.keys.get(t.actor or "")
                role = key.role_at(t.position) if key is not None else "unknown key"
                self.add(t.position, "attestation", f"attested ({role}): {t.detail or 'note'}")
            case "withdrawal" | "hiding" | "rerun-request":
                reason = f": {t.detail}" if t.detail else ""
                self.add(t.position, t.kind, _WITH_REASON[t.kind] + reason)
            case "report":
                self.add(t.position, "report", f"report filed: {t.detail}")
            case "resolution":
                note = f": {t.note}" if t.note else ""
                self.add(t.position, "resolution", f"report {t.detail}{note}")
            case "rerun-claim":
                counted = "" if t.position in self.counted_claims else " (did not count)"
                self.add(
                    t.position, "rerun-claim", f"rerun claimed by {self.name(t.actor)}{counted}"
                )
            case "rerun-result":
                rerun = self.counted_reruns.get(t.position)
                verdict = _verdict(rerun) if rerun is not None else "not counted"
                self.add(
                    t.position, "rerun-result", f"rerun result by {self.name(t.actor)}: {verdict}"
                )
            case "citation":
                self.add(t.position, "citation", f"citation notarized (accessed {t.detail})")
            case "supersedes":
                self.add(t.position, "supersedes", f"supersedes {short_id(t.other or '')}")
            case "rank":
                self.ranks[t.position] = RankMove(t.before, t.after)
                self.add(t.position, "rank", _rank_words(t.before, t.after))
            case "leader":
                self.add(t.position, "leader", self._leader_words(t.leader, t.previousLeader))

    def _leader_words(self, leader: str | None, previous: str | None) -> str:
        if leader == self.digest:
            return "became group leader" + (f" after {short_id(previous)}" if previous else "")
        if previous == self.digest:
            return f"lost the group lead to {short_id(leader)}" if leader else "no longer leads"
        if leader is None:
            return "its group has no leader"
        was = f"{short_id(previous)} → " if previous else ""
        return f"group leader {was}{short_id(leader)}"


def _rank_words(before: int | None, after: int | None) -> str:
    if before is None:
        return f"ranked #{after} in its group"
    if after is None:
        return f"left its group's ranking (was #{before})"
    return f"rank #{before} → #{after} in its group"


def _cause(digest: str, header: EntryHeader) -> str:
    """Words naming another run an entry was about (its rank or leader moves touched this one)."""
    subject = header.subject
    if subject == digest or not subject.startswith("sha256:") or "." not in header.type:
        return ""
    return f" (run {short_id(subject)} {header.type.split('.')[1]})"


def run_history(
    conn: Session, log: LogReader, ref: str, as_of: int | None, *, size: int
) -> RunHistory:
    """Every entry that touched the run ``ref`` names, up to ``as_of`` (None: now, ``size``
    entries), in log order.

    Raises:
        UnknownRun: nothing matches, or the run was not in the log yet at ``as_of``.
        AmbiguousRun: the reference names several runs.
        LogCorrupted: an entry the projections name has no readable leaf.
    """
    return history_sheet(conn, log, ref, as_of, size=size).history


def history_sheet(
    conn: Session, log: LogReader, ref: str, as_of: int | None, *, size: int
) -> HistorySheet:
    """``run_history`` and the run's view as of the size read (for its page).

    Raises:
        UnknownRun, AmbiguousRun, LogCorrupted: as ``run_history``.
    """
    digest = queries.resolve_run(conn, ref, as_of)
    versions = queries.run_versions(conn, digest, as_of)
    if not versions:
        raise UnknownRun(f"no run matches {ref!r}", reference=ref)
    tree = size if as_of is None else as_of
    ingest = versions[0][0]
    touches = [
        *run_touches(conn, digest, as_of),
        *successor_touches(conn, digest, _row_key(log, ingest), as_of),
        *standing_changes(conn, digest, as_of),
    ]
    positions = sorted({p for p, _ in versions} | {t.position for t in touches})
    headers = log.headers_at(positions)
    facts = _Facts(digest, queries.keyring(conn))
    facts.versions(versions, headers.get(ingest))
    for touch in sorted(touches, key=lambda t: (t.position, _ORDER.get(t.kind, 99))):
        facts.touch(touch)
    entries = []
    for position in positions:
        header = headers.get(position)
        if header is None:
            raise LogCorrupted(f"entry {position} is not in the log", position=position)
        parts = sorted(facts.by_position.get(position, []), key=lambda f: _ORDER[f[0]])
        kinds = list(dict.fromkeys(kind for kind, _ in parts))
        words = "; ".join(text for _, text in parts)
        if set(kinds) <= {"rank", "leader"}:
            words += _cause(digest, header)
        key_id = _signer(log, position)
        key = facts.keys.get(key_id)
        entries.append(
            HistoryEntry(
                position=position,
                recordedAt=header.recorded_at,
                type=header.type,
                subject=header.subject,
                event=words,
                kinds=kinds,
                signer=Signer(key_id, key.name if key is not None else None),
                links=EntryLinks(
                    proof=f"/v1/log/proof/inclusion?index={position}&size={tree}",
                    entry=f"/v1/log/entries?start={position}&end={position + 1}",
                    signer=f"/v1/keys/{key_id}",
                    run=f"/v1/runs/{digest}?asOf={position + 1}",
                ),
                evidenceLevel=facts.levels.get(position),
                rank=facts.ranks.get(position),
            )
        )
    return HistorySheet(RunHistory(digest, tree, entries), versions[-1][1])

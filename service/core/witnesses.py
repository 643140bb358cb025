"""The witnesses a log asks to cosign its checkpoints, and the loop that asks them.

Which witnesses a log asks is **configuration** (``DATA/witnesses.json``), not log entries:
adding, retiring or moving a witness says nothing about the log's history, and no reader has to
trust the log's list. A reader decides whom it trusts (``--witness-key``, ``--quorum``); what it
checks is the cosignatures, which are kept beside their checkpoint in the store
(``add_cosignatures``) and so reach every reader of the note.

``Cosigner.round`` sends the latest checkpoint to each configured witness behind it (C2SP
tlog-witness: the old size it last cosigned, the consistency proof from there, the note). A 409
with ``text/x.tlog.size`` teaches it the witness's size and it asks again from there; a 409
otherwise, or a 422, is a witness that saw another history: logged loudly, kept in
``DATA/witness-status.json`` (the log page shows it), and the log goes on. ``Cosigner.run``
repeats rounds on a thread of its own with bounded retries and backoff: a write never waits for
a witness.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import structlog

from keys import KeyringError
from keys.cosignatures import WitnessVerifier, cosignatures, parse_witness_vkey
from service.errors import UsageError

__all__ = [
    "CONFIG",
    "STATUS",
    "Cosigner",
    "WitnessConfig",
    "add_witness",
    "configured",
    "remove_witness",
    "save_configured",
    "start_cosigner",
    "witness_states",
    "witness_status",
]

CONFIG, STATUS = "witnesses.json", "witness-status.json"
SIZE_TYPE = "text/x.tlog.size"
_log = structlog.get_logger("benchproof.witnesses")


@dataclass(frozen=True, slots=True)
class WitnessConfig:
    """A witness the log asks: where (its submission prefix) and its key."""

    url: str
    vkey: str

    @property
    def verifier(self) -> WitnessVerifier:
        return parse_witness_vkey(self.vkey)


def configured(data: Path) -> list[WitnessConfig]:
    """The witnesses ``data`` is configured to ask (none if no file).

    Raises:
        UsageError: the file is not the list this module writes.
    """
    path = data / CONFIG
    try:
        raw = json.loads(path.read_text())
        return [WitnessConfig(str(w["url"]), str(w["vkey"])) for w in raw["witnesses"]]
    except FileNotFoundError:
        return []
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not a witness list ({exc})") from None


def save_configured(data: Path, witnesses: list[WitnessConfig]) -> None:
    """Write the list atomically (a temporary file renamed over it)."""
    path = data / CONFIG
    partial = path.with_name(CONFIG + ".partial")
    body = {"witnesses": [{"url": w.url, "vkey": w.vkey} for w in witnesses]}
    partial.write_text(json.dumps(body, indent=2) + "\n")
    os.replace(partial, path)


def add_witness(data: Path, url: str, vkey_text: str) -> WitnessConfig:
    """Configure a witness (its URL and vkey).

    Raises:
        UsageError: a URL that is not http(s), a vkey that is not a witness's, or a witness
            already configured (by URL or by key name).
    """
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"a witness URL is http:// or https://, not {url!r}")
    try:
        verifier = parse_witness_vkey(vkey_text)
    except KeyringError as exc:
        raise UsageError(f"not a witness vkey: {exc.detail}") from None
    url = url.rstrip("/")
    listed = configured(data)
    for w in listed:
        if w.url == url or w.verifier.name == verifier.name:
            raise UsageError(f"a witness is already configured at {w.url} ({w.verifier.name})")
    added = WitnessConfig(url, verifier.vkey)
    save_configured(data, [*listed, added])
    return added


def witness_status(data: Path) -> dict[str, dict[str, Any]]:
    """What the cosigner last knew of each witness (by key name): ``cosignedSize`` and
    ``refusal`` (None, or why it refused the log's latest checkpoint); empty before a round."""
    try:
        raw = json.loads((data / STATUS).read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def witness_states(data: Path) -> list[dict[str, Any]]:
    """Each configured witness with what the cosigner last knew of it: ``name``, ``url``,
    ``vkey``, ``cosignedSize`` and ``refusal`` (None before its first round).

    Raises:
        UsageError: the list is not the one this module writes.
    """
    status = witness_status(data)
    states = []
    for w in configured(data):
        name = w.verifier.name
        known = status.get(name, {})
        states.append(
            {
                "name": name,
                "url": w.url,
                "vkey": w.vkey,
                "cosignedSize": known.get("cosignedSize"),
                "refusal": known.get("refusal"),
            }
        )
    return states


def remove_witness(data: Path, which: str) -> WitnessConfig:
    """Stop asking the witness named by its URL or key name.

    Raises:
        UsageError: none is configured so.
    """
    listed = configured(data)
    kept = [w for w in listed if which.rstrip("/") not in (w.url, w.verifier.name)]
    if len(kept) == len(listed):
        raise UsageError(f"no witness {which!r} is configured")
    save_configured(data, kept)
    (gone,) = [w for w in listed if w not in kept]
    return gone


@dataclass
class _Known:
    size: int = 0  # the size the witness last cosigned, as far as the log knows
    refusal: str | None = None
    refused: int | None = None  # the size of the checkpoint it refused


@dataclass
class Cosigner:
    """Asks the configured witnesses to cosign the log's latest checkpoint.

    ``store``: the log's writable store (``add_cosignatures``); ``data``: the data directory
    (its configuration and status); ``reads``: a handle that reads only committed state
    (``latest_checkpoint``, ``consistency_proof``), default ``store``. A thread beside other
    writers passes a read handle of its own: on the writers' connection it could see, and
    send, a checkpoint a transaction under way has not committed."""

    store: Any
    data: Path
    reads: Any = None
    timeout: float = 10.0
    clock: Callable[[], float] = time.time
    known: dict[str, _Known] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # What the last process knew: a restart neither forgets a refusal (the log page shows
        # it until the witness cosigns again) nor asks a witness from size 0 again.
        if not self.known:
            for name, seen in witness_status(self.data).items():
                if isinstance(seen, dict):
                    size, refusal = seen.get("cosignedSize"), seen.get("refusal")
                    refused = seen.get("refusedSize")
                    self.known[name] = _Known(
                        size if isinstance(size, int) else 0,
                        refusal if isinstance(refusal, str) else None,
                        refused if isinstance(refused, int) else None,
                    )

    def round(self) -> dict[str, str]:
        """One round: each witness behind the latest checkpoint is asked once (twice after a
        409 naming its size). Returns what came of each (by witness name): ``cosigned``,
        ``current``, ``refused: ...`` or ``unreachable: ...``."""
        reads = self.store if self.reads is None else self.reads
        latest = reads.latest_checkpoint()
        if latest is None:
            return {}
        outcome: dict[str, str] = {}
        with httpx.Client(timeout=self.timeout) as http:
            for witness in configured(self.data):
                verifier = witness.verifier
                state = self.known.setdefault(verifier.name, _Known())
                if state.size == latest.size and state.refusal is None:
                    outcome[verifier.name] = "current"
                    continue
                if state.refusal is not None and state.refused == latest.size:
                    # Refused this checkpoint already: asked again at the next one, not
                    # every round (the refusal stays logged, in the status and on the page).
                    outcome[verifier.name] = f"refused: {state.refusal}"
                    continue
                said = self._ask(http, witness, verifier, latest, state, reads)
                if said.startswith("refused"):
                    state.refused = latest.size
                outcome[verifier.name] = said
        self._write_status()
        return outcome

    def _ask(
        self,
        http: httpx.Client,
        witness: WitnessConfig,
        verifier: WitnessVerifier,
        latest: Any,
        state: _Known,
        reads: Any,
    ) -> str:
        for _ in range(2):
            old = state.size if state.size <= latest.size else 0
            proof = reads.consistency_proof(old, latest.size) if 0 < old < latest.size else []
            body = (
                f"old {old}\n".encode()
                + b"".join(_b64(h) + b"\n" for h in proof)
                + b"\n"
                + latest.note  # with the cosignatures it has: a witness ignores other keys
            )
            try:
                answer = http.post(witness.url + "/add-checkpoint", content=body)
            except httpx.HTTPError as exc:
                return f"unreachable: {type(exc).__name__}"
            kind = answer.headers.get("content-type", "").split(";")[0].strip()
            if answer.status_code == 409 and kind == SIZE_TYPE:
                try:
                    state.size = int(answer.text.strip())
                except ValueError:
                    return self._refused(verifier, state, "409 with a size that is not a number")
                if state.size > latest.size:
                    return self._refused(
                        verifier,
                        state,
                        f"it holds size {state.size}, above the log's {latest.size}",
                    )
                continue
            if answer.status_code != 200:
                return self._refused(
                    verifier, state, f"{answer.status_code}: {answer.text.strip()[:200]}"
                )
            lines = [line for line in answer.text.splitlines() if line]
            note = latest.note + "".join(f"{line}\n" for line in lines).encode()
            try:
                if verifier.name not in cosignatures(note, [verifier]):
                    return self._refused(verifier, state, "it answered no cosignature of its key")
            except (KeyringError, ValueError) as exc:
                return self._refused(verifier, state, f"its cosignature does not verify: {exc}")
            self.store.add_cosignatures(latest.size, lines)
            state.size, state.refusal, state.refused = latest.size, None, None
            return "cosigned"
        return "unreachable: it kept naming another size"

    def _refused(self, verifier: WitnessVerifier, state: _Known, why: str) -> str:
        state.refusal = why
        _log.error("witness refused the log's checkpoint", witness=verifier.name, reason=why)
        return f"refused: {why}"

    def _write_status(self) -> None:
        body = {
            name: {"cosignedSize": k.size, "refusal": k.refusal, "refusedSize": k.refused}
            for name, k in self.known.items()
        }
        path = self.data / STATUS
        partial = path.with_name(STATUS + ".partial")
        partial.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
        os.replace(partial, path)

    def run(self, stop: threading.Event, *, every: float = 1.0, attempts: int = 5) -> None:
        """Rounds until ``stop`` is set: one per ``every`` seconds while a witness is behind;
        after a round that left one unreachable, back off (doubling, ``attempts`` times at most
        for one checkpoint) and then wait for the next checkpoint."""
        delay, tries, last_size = every, 0, -1
        while not stop.is_set():
            latest = (self.store if self.reads is None else self.reads).latest_checkpoint()
            size = -1 if latest is None else latest.size
            if size != last_size:
                delay, tries, last_size = every, 0, size
            if tries < attempts:
                try:
                    outcome = self.round()
                except Exception:  # noqa: BLE001 - the loop never takes the service down
                    _log.exception("the witness round failed")
                    outcome = {"?": "unreachable"}
                if any(v.startswith("unreachable") for v in outcome.values()):
                    tries += 1
                    delay = min(delay * 2, 60.0)
                else:
                    delay = every
            stop.wait(delay)


def _b64(h: bytes) -> bytes:
    import base64

    return base64.b64encode(h)


def start_cosigner(store: Any, data: Path, store_url: str) -> Callable[[], None]:
    """Ask the witnesses ``data`` configures in the background, on a daemon thread with a read
    handle of its own on the store at ``store_url``, for as long as the process runs; returns
    the function that stops it. The configuration is read again each round: a witness added
    or removed while the service runs is asked, or no longer asked, from the next round. A
    service started with no witness configured starts nothing (no thread, no read handle):
    adding the first one takes a restart."""
    from events.stores import open_reader

    stop = threading.Event()
    if not configured(data):
        return stop.set

    def work() -> None:
        reads = open_reader(store_url)
        try:
            Cosigner(store, data, reads=reads).run(stop)
        finally:
            reads.close()

    thread = threading.Thread(target=work, name="cosigner", daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join(timeout=15)

    return halt

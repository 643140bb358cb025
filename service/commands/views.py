"""``benchproof runs list|show|history``, ``groups show|history`` and ``replay``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from service.app import groups, history, runs
from service.app.replay import replay
from service.commands.base import Sub, plain
from service.core.ledger import open_log
from service.core.logs import OpenedLog
from service.readmodel.asof import resolve_as_of
from service.readmodel.dossier import Dossier, short_id

# pure formatting (no litestar): as the pages show it
from service.web.present import measured, quantity

_ENC = msgspec.json.Encoder()
T = TypeVar("T")
_SERVER_HELP = (
    "ask this server instead of reading the data directory; with --json, print its signed "
    "answer (check it with `benchproof verify-answer`)"
)


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    as_of = argparse.ArgumentParser(add_help=False)
    as_of.add_argument(
        "--as-of",
        dest="as_of",
        metavar="X",
        help="a tree size or an RFC 3339 instant (default: now)",
    )
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="machine-readable output")

    runs = sub.add_parser("runs", parents=[common], help="show and list runs")
    runsub = runs.add_subparsers(dest="runs_command", metavar="WHAT", parser_class=type(runs))
    runsub.required = True
    p = runsub.add_parser("show", parents=[common, as_of, as_json], help="one run's dossier")
    p.add_argument(
        "run",
        metavar="RUN",
        help="short id, sha256:… digest, kernelindex:<uuid> or <source>:<externalId>",
    )
    p.add_argument("--server", metavar="URL", help=_SERVER_HELP)
    p.set_defaults(handler=_show)
    p = runsub.add_parser(
        "list", parents=[common, as_of, as_json], help="every run (JSON lines with --json)"
    )
    p.add_argument("--group", metavar="KEY", help="only runs of this comparison (or cohort) key")
    p.add_argument("--source", help="only runs from this source")
    p.add_argument("--evidence", help="only runs at this evidence level")
    p.set_defaults(handler=_list)
    p = runsub.add_parser(
        "history",
        parents=[common, as_of, as_json],
        help="every entry that touched a run, in log order",
    )
    p.add_argument(
        "run",
        metavar="RUN",
        help="short id, sha256:… digest, kernelindex:<uuid> or <source>:<externalId>",
    )
    p.add_argument("--server", metavar="URL", help=_SERVER_HELP)
    p.set_defaults(handler=_run_history)

    for what, said in _LISTINGS.items():
        p = runsub.add_parser(what, parents=[common, as_of, as_json], help=said)
        p.add_argument(
            "run",
            metavar="RUN",
            help="short id, sha256:… digest, kernelindex:<uuid> or <source>:<externalId>",
        )
        p.add_argument(
            "--server", metavar="URL", help="ask this server instead of reading the data directory"
        )
        p.set_defaults(handler=_listing, listing=what)

    groups = sub.add_parser("groups", parents=[common], help="comparison groups and leader history")
    groupsub = groups.add_subparsers(
        dest="groups_command", metavar="WHAT", parser_class=type(groups)
    )
    groupsub.required = True
    p = groupsub.add_parser("show", parents=[common, as_of, as_json], help="a group's ranked runs")
    p.add_argument("key", metavar="KEY")
    p.add_argument("--server", metavar="URL", help=_SERVER_HELP)
    p.set_defaults(handler=_group)
    p = groupsub.add_parser(
        "history", parents=[common, as_of, as_json], help="leader changes (JSON lines with --json)"
    )
    p.add_argument("key", metavar="KEY", nargs="?")
    p.set_defaults(handler=_history)

    p = sub.add_parser(
        "replay", parents=[common], help="rebuild every projection from the log and compare"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print {ok, entries, digests, differences} as one JSON object",
    )
    p.set_defaults(handler=_replay)


def _ledger(args: argparse.Namespace, fn: Callable[[OpenedLog, int | None], int]) -> int:
    with open_log(args.data) as ledger:
        at = resolve_as_of(ledger.store, getattr(args, "as_of", None))
        return fn(ledger, at)


def _write(obj: Any) -> None:
    sys.stdout.buffer.write(_ENC.encode(obj) + b"\n")


def _write_pretty(obj: Any) -> None:
    sys.stdout.buffer.write(msgspec.json.format(_ENC.encode(obj), indent=2) + b"\n")


def _remote(args: argparse.Namespace, path: str) -> bytes | None:
    """The server's answer to ``GET path`` (as of ``--as-of``): printed as a saved signed answer
    with ``--json`` (None returned), else its body, for the caller to print as text."""

    from service.app.answers import fetch_signed
    from service.console.client import Client

    path = _as_of(args, path)
    if not args.json:
        with Client(args.server) as client:
            return client.fetch(path).content
    _write_pretty(fetch_signed(args.server, path))
    return None


def _as_of(args: argparse.Namespace, path: str) -> str:
    """``path`` asked as of ``--as-of`` (when given)."""
    from urllib.parse import quote

    return path + "?asOf=" + quote(args.as_of, safe=":") if args.as_of else path


def _decoded(body: bytes, shape: type[T], server: str) -> T:
    """A server's answer as ``shape``; one that is not is bad input (exit 2)."""
    from service.errors import UsageError

    try:
        return msgspec.json.decode(body, type=shape)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UsageError(f"{server} answered something other than expected: {exc}") from None


def _show(args: argparse.Namespace) -> int:
    if args.server:
        from service.console.client import run_path

        body = _remote(args, run_path(args.run))
        if body is not None:
            print(_dossier_text(_decoded(body, Dossier, args.server)))
        return 0

    def run(ledger: OpenedLog, at: int | None) -> int:
        store = ledger.store
        dossier = runs.show_run(store.session, store, args.run, at, size=store.size)
        if args.json:
            _write_pretty(dossier)
        else:
            print(_dossier_text(dossier))
        return 0

    return _ledger(args, run)


def _measurement_lines(dossier: Dossier) -> list[str]:
    """Each figure the run published, as the page shows it (an interval by its two ends)."""
    lines = []
    for m in dossier.measurements:
        label = " ".join(str(m[k]) for k in ("metric", "statistic") if m.get(k))
        lines.append(f"  measured        {label}: {measured(m.get('value'), m.get('unit'))}")
    return lines


def _dossier_text(dossier: Dossier) -> str:
    primary = dossier.primary
    value = (
        f"{quantity(primary.value, primary.unit)} ({primary.metric} {primary.statistic})"
        if primary
        else "none"
    )
    lines = [
        f"Run {dossier.shortId}  {dossier.title or dossier.name}",
        f"  digest          {dossier.runDigest}",
        f"  primary         {value}",
        *_measurement_lines(dossier),
        f"  rank            {_rank_text(dossier)}",
        f"  evidence        {dossier.evidenceLevel}: {dossier.evidenceReason}",
        f"  status          {dossier.status}"
        + (f" ({dossier.sourceStatus})" if dossier.sourceStatus else ""),
        f"  source          {dossier.source} {dossier.externalId or ''}".rstrip(),
        f"  observed        {dossier.observedAt}; recorded {dossier.recordedAt} (entry {dossier.ingestPosition})",
        f"  hardware        {dossier.hardware or 'unknown'}",
        f"  aliases         {', '.join(dossier.aliases) or '-'}",
        f"  unresolved      {', '.join(dossier.unresolved) or '-'}",
        f"  as of size      {dossier.asOf}",
    ]
    return "\n".join(lines)


def _rank_text(d: Dossier) -> str:
    """The run's place in its group, or why it has none (ranking-v1: passed or valid, not
    retracted or superseded, a primary value and a resolved group)."""
    key = d.comparisonKey if d.kind == "BenchmarkRun" else d.cohortKey
    if d.rank is not None:
        return f"#{d.rank.rank} of {d.rank.of} in {key}"
    if d.retractedReason is not None:
        why = f"retracted: {d.retractedReason}"
    elif d.supersededBy is not None:
        why = f"superseded by {short_id(d.supersededBy)}"
    elif d.status not in ("passed", "valid"):
        why = f"the source marked it {d.status}"
    elif d.primary is None or d.primary.value is None:
        why = "no primary measurement"
    elif key is None:
        why = "no comparison key" if d.kind == "BenchmarkRun" else "no cohort key"
        if d.unresolved:
            why += f": waits on its {', '.join(d.unresolved)} manifests"
    else:
        why = "not eligible"
    return f"not ranked ({why})"


def _run_history(args: argparse.Namespace) -> int:
    if args.server:
        from service.console.client import run_path

        body = _remote(args, run_path(args.run, "history"))
        if body is not None:
            _print_run_history(_decoded(body, history.RunHistory, args.server))
        return 0

    def run(ledger: OpenedLog, at: int | None) -> int:
        store = ledger.store
        found = history.run_history(store.session, store, args.run, at, size=store.size)
        if args.json:
            _write_pretty(found)
        else:
            _print_run_history(found)
        return 0

    return _ledger(args, run)


_LISTINGS = {
    "attestations": "a run's attestations (withdrawn ones marked; hidden ones counted)",
    "reports": "the reports filed on a run, with their resolution",
    "reruns": "a run's index-controlled reruns and what each measured",
}


def _listing(args: argparse.Namespace) -> int:
    """``runs attestations|reports|reruns RUN``: one list of the run's dossier, one line each
    (``--json``: the list as JSON), from the data directory or ``--server``."""
    if args.server:
        from service.console.client import Client, run_path

        with Client(args.server) as client:
            body = client.fetch(_as_of(args, run_path(args.run))).content
        _print_listing(args, _decoded(body, Dossier, args.server))
        return 0

    def run(ledger: OpenedLog, at: int | None) -> int:
        store = ledger.store
        _print_listing(args, runs.show_run(store.session, store, args.run, at, size=store.size))
        return 0

    return _ledger(args, run)


def _print_listing(args: argparse.Namespace, d: Dossier) -> None:
    items: list[Any] = list(getattr(d, args.listing))
    if args.json:
        _write_pretty(items)
        return
    lines = {
        "attestations": _attestation_line,
        "reports": _report_line,
        "reruns": _rerun_line,
    }[args.listing]
    print(f"{args.listing.capitalize()} of run {d.shortId} as of tree size {d.asOf}: {len(items)}")
    for item in items:
        print("  " + plain(lines(item), 1000))  # texts anyone may post
    if args.listing == "attestations" and d.hiddenByModeration:
        print(f"  ({d.hiddenByModeration} hidden by the index's moderation, kept in the log)")


def _attestation_line(a: Any) -> str:
    kind = str(a.predicate.get("kind", "?"))
    value = a.predicate.get("value")
    said = f" {measured(value, a.predicate.get('unit'))}" if value is not None else ""
    state = " (withdrawn" + (f": {a.withdrawalReason})" if a.withdrawalReason else ")")
    return (
        f"{a.id[:19]}…  entry {a.position:<8} {a.recordedAt}  {kind}{said}  by {a.attester[:12]}"
        + (state if a.withdrawn else "")
    )


def _report_line(r: Any) -> str:
    state = f"resolved: {r.resolution}" if r.resolution else "open"
    text = r.text if len(r.text) <= 60 else r.text[:59] + "…"
    return f"{r.id[:19]}…  entry {r.position:<8} {r.recordedAt}  {r.category}  [{state}]  {text}"


def _rerun_line(r: dict[str, Any]) -> str:
    value = measured(r.get("value"), r.get("unit")) if r.get("value") is not None else "-"
    verdict = "within tolerance" if r.get("withinTolerance") else "out of tolerance"
    if not r.get("correctnessPassed"):
        verdict = "incorrect"
    who = r.get("identity") or str(r.get("rerunner", ""))[:12]
    return (
        f"entry {r.get('position')!s:<8} {r.get('recordedAt')}  {value}  {verdict}"
        f" (policy {r.get('policyVersion')})  by {who}"
    )


def _print_run_history(found: history.RunHistory) -> None:
    print(f"History of run {short_id(found.runDigest)} as of tree size {found.asOf}")
    for e in found.entries:
        signer = e.signer.name or e.signer.keyId[:12] or "-"
        print(
            f"{e.position:>8}  {e.recordedAt}  {e.type:<24} {signer:<20} {e.event}"
            + (f"  [{e.evidenceLevel}]" if e.evidenceLevel else "")
        )


def _list(args: argparse.Namespace) -> int:
    def run(ledger: OpenedLog, at: int | None) -> int:
        out = sys.stdout.buffer
        listed = runs.list_runs(
            ledger.store.session,
            at,
            group_key=args.group,
            source=args.source,
            evidence=args.evidence,
        )
        for view, rank, aliases in listed:
            if not args.json:
                value = quantity(view.primaryValue, view.primaryUnit)
                out.write(
                    f"{short_id(view.runDigest)}  {view.evidenceLevel:<12} {value:>14}"
                    f"  {view.source:<18} {view.name}\n".encode()
                )
                continue
            row = {
                "runDigest": view.runDigest,
                "shortId": short_id(view.runDigest),
                "kind": view.kind,
                "comparisonKey": view.comparisonKey,
                "cohortKey": view.cohortKey,
                "rank": rank[0] if rank else None,
                "of": rank[1] if rank else None,
                "evidenceLevel": view.evidenceLevel,
                "status": view.status,
                "source": view.source,
                "externalId": view.externalId,
                "aliases": aliases,
                "primaryValue": view.primaryValue,
                "primaryUnit": view.primaryUnit,
                "hardware": view.hardware,
                "observedAt": view.observedAt,
            }
            out.write(_ENC.encode(row) + b"\n")
        return 0

    return _ledger(args, run)


def _group(args: argparse.Namespace) -> int:
    if args.server:
        from urllib.parse import quote

        body = _remote(args, "/v1/groups/" + quote(args.key, safe=":"))
        if body is not None:
            page = _decoded(body, groups.GroupPage, args.server)
            _print_group(page.group, [(r.rank, r.run) for r in page.runs])
        return 0

    def run(ledger: OpenedLog, at: int | None) -> int:
        key = groups.resolve_group(ledger.store.session, args.key, at)
        summary, members = groups.standing(ledger.store.session, key, at)
        if args.json:
            body = {
                **msgspec.to_builtins(summary),
                "runs": [
                    {
                        "rank": r,
                        "runDigest": v.runDigest,
                        "value": v.primaryValue,
                        "unit": v.primaryUnit,
                        "observedAt": v.observedAt,
                        "evidenceLevel": v.evidenceLevel,
                        "name": v.name,
                    }
                    for r, v in members
                ],
            }
            _write_pretty(body)
            return 0
        _print_group(summary, members)
        return 0

    return _ledger(args, run)


def _print_group(summary: Any, members: Any) -> None:
    """A group's ranked runs as text (``members``: (rank, run view or summary) pairs)."""
    print(
        f"group {summary.comparisonKey} ({summary.metricKey}, {summary.direction} is better), {summary.members} runs"
    )
    for r, v in members:
        print(
            f"  #{r:<4} {short_id(v.runDigest)}  {quantity(v.primaryValue, v.primaryUnit):>10}  {v.name}"
        )


def _history(args: argparse.Namespace) -> int:
    def run(ledger: OpenedLog, at: int | None) -> int:
        conn = ledger.store.session
        key = groups.resolve_group(conn, args.key, at) if args.key else None
        for change in groups.leader_history(conn, key, at):
            if args.json:
                _write(change)
            else:
                prev = short_id(change.previousRunDigest) if change.previousRunDigest else "-"
                print(
                    f"{change.at}  {change.comparisonKey[:19]}  {short_id(change.runDigest)} (was {prev})  {change.cause}"
                )
        return 0

    return _ledger(args, run)


def _replay(args: argparse.Namespace) -> int:
    with open_log(args.data) as ledger:
        report = replay(ledger)
    if args.json:
        answer = {
            "ok": report.ok,
            "entries": report.entries,
            "digests": report.digests,
            "differences": report.differences,
        }
        _write(answer)
    else:
        for table, digest in report.digests.items():
            print(f"  {table:<16} {digest}")
        if report.ok:
            print(
                f"ok: {report.entries} entries replayed; every projection equals the "
                "incremental one"
            )
    if report.ok:
        return 0
    first = report.differences[0]
    sys.stderr.write(
        f"benchproof: replay differs in table {first.table}: first differing row "
        f"incremental={_ENC.encode(first.incremental).decode()} rebuilt={_ENC.encode(first.rebuilt).decode()}\n"
    )
    return 1

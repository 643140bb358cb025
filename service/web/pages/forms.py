"""``POST /runs/{ref}/reports``: the run page's "Report an issue" form, which works with no
JavaScript. It files the report as ``POST /v1/runs/{ref}/reports`` does (anonymous, signed by
the index as ``report.filed.v1``); the answer is 303 to the run page's reports, where it is
shown and the run is under review. A bad form answers the HTML error page (400), appending
nothing.

Cross-site requests: the form carries no token because nothing here is a session. The site
sets no cookie and a report is anonymous, so a forged post has no authority a stranger lacks.
What it could do is file reports from visitors' browsers when another site makes them post
the form: a browser sends ``Origin`` with every form post, and one naming another host is
refused (403). A client with no ``Origin`` (curl, the CLI) is a direct caller and may post."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import msgspec
from litestar import Request, post
from litestar.exceptions import PermissionDeniedException
from litestar.params import FromPath, RawBody
from litestar.response import Redirect

from service.app import report
from service.errors import NotFound
from service.web.deps import LedgerDep, ReaderDep
from service.web.limiting import GateDep
from service.web.present import Urls
from service.web.refs import ref_of

__all__ = ["ReportForm", "no_form", "report_form"]


class ReportForm(msgspec.Struct, frozen=True):
    """The form's fields: one of ``report.REASONS`` and what the reporter found."""

    reason: str
    text: str

    @classmethod
    def parse(cls, body: bytes) -> ReportForm:
        """The form from its URL-encoded ``body``, read strictly: UTF-8 throughout (percent
        escapes included: a browser never sends anything else, and replacement characters
        would put in the log a text nobody wrote), each of the two fields exactly once.

        Raises:
            InvalidReport: otherwise.
        """
        try:
            pairs = parse_qsl(body.decode(), keep_blank_values=True, errors="strict")
        except UnicodeDecodeError as exc:
            raise report.InvalidReport("the report form is not UTF-8 text") from exc
        fields = dict(pairs)
        if len(fields) != len(pairs) or set(fields) != {"reason", "text"}:
            raise report.InvalidReport("the report form has one reason and one text")
        return cls(fields["reason"], fields["text"])


def _same_origin(request: Request[Any, Any, Any]) -> bool:
    """Whether the request comes from one of this site's pages, or from no browser page at all
    (no ``Origin``): a browser names the page's origin on every form post."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == request.headers.get("host")


@post("/runs/{ref:str}/reports", include_in_schema=False, sync_to_thread=True)
def report_form(
    request: Request[Any, Any, Any],
    ledger: LedgerDep,
    reader: ReaderDep,
    gate: GateDep,
    ref: FromPath[str],
    body: RawBody,
) -> Redirect:
    """File the form's report on the run ``ref`` names; 303 to the run page's reports.

    Raises:
        PermissionDeniedException: the form was posted from another site's page.
        InvalidReport: not a form of one reason and one text in UTF-8, an unknown reason, or
            a text over ``report.MAX_TEXT_BYTES``.
        UnknownRun, AmbiguousRun: ``ref``.
        RateLimited: the client address is over its limit (counted as the JSON API's reports).
    """
    if not _same_origin(request):
        raise PermissionDeniedException("a report form is posted from this site's own pages")
    run = ref_of(ref)
    data = ReportForm.parse(body)
    filed = msgspec.json.encode({"reason": data.reason, "text": data.text})
    gate.quota(request).anonymous()
    report.file_report(ledger, run, filed)
    reader.invalidate()
    return Redirect(Urls(None).run(run) + "#report", status_code=303)


@post("/runs/{ref:str}", include_in_schema=False)
async def no_form(ref: FromPath[str], body: RawBody) -> None:
    """A post to a run page that is not its report form (404, the HTML error page).

    Raises:
        NotFound: always.
    """
    raise NotFound("a form posts to /runs/{ref}/reports")

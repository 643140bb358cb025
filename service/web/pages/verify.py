"""``/verify``: the offline verifier page (``service.verifierpage``), the same self-contained
file ``benchproof verifier OUT.html`` writes. It checks receipts and signed answers in the
browser and asks this server for nothing; the middleware's policy for this path admits its
inline script and style by their hashes (``page_hashes``), and nothing else."""

from __future__ import annotations

from litestar import get

from service.verifierpage.page import page_html
from service.web.caching import Read
from service.web.pages.render import page

__all__ = ["verify_page"]


@get("/verify", include_in_schema=False, sync_to_thread=False)
def verify_page() -> Read:
    """The verifier page, with its ETag (304 when it matches)."""
    return page(page_html())

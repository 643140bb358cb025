"""``/keys``: every key the log registered, a page at a time. ``/keys/{id}`` (its full id or its
short one): a signing key's page: its self-chosen name, role, when the log registered
it, whether it was revoked or rotated, and the attestations it signed (in keyset pages), each
linking to its run. The key is read as the log holds it now; an unknown key is an HTML 404."""

from __future__ import annotations

from typing import Any

from litestar import Request, get
from litestar.params import FromPath, FromQuery

from service.app import keylist, pages
from service.web import community, present
from service.web.caching import Read
from service.web.deps import ReaderDep
from service.web.pages.render import page, render

__all__ = ["PAGE_SIZE", "key_page", "keys_page"]

PAGE_SIZE = 100


@get("/keys", include_in_schema=False, sync_to_thread=True)
def keys_page(
    request: Request[Any, Any, Any], reader: ReaderDep, after: FromQuery[str | None] = None
) -> Read:
    """Every key the log registered, oldest first, ``PAGE_SIZE`` at a time."""
    size = reader.size()

    def make() -> bytes:
        found = keylist.key_page(reader.conn, reader.log, after=after, limit=PAGE_SIZE)
        context = {
            "keys": found.items,
            "next": f"/keys?after={found.next}" if found.next else None,
            "first": "/keys" if after is not None else None,
            "as_of": None,
        }
        return render(request, "keys.html", context)

    body, etag = reader.cached(("keys", after, size), make)
    return page(body, etag)


@get("/keys/{key_id:str}", include_in_schema=False, sync_to_thread=True)
def key_page(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    key_id: FromPath[str],
    after: FromQuery[str | None] = None,
) -> Read:
    """The key ``key_id`` (its full id or its short one) with the attestations it signed,
    ``PAGE_SIZE`` at a time."""
    size = reader.size()
    key_id = keylist.resolve_key(reader.conn, key_id)

    def make() -> bytes:
        sheet = pages.key_sheet(
            reader.conn, reader.log, key_id, size=size, after=after, limit=PAGE_SIZE
        )
        return render(request, "key.html", _context(sheet, paged=after is not None))

    body, etag = reader.cached(("key", key_id, after, size), make)
    return page(body, etag)


def _context(sheet: pages.KeySheet, *, paged: bool) -> dict[str, Any]:
    key, urls = sheet.key, present.Urls(None)
    attested = [
        {
            "note": community.note(a, None, key),
            "run": urls.run(a.runDigest),
            "shortId": a.runDigest[7:19],
            "title": sheet.runTitles.get(a.runDigest),
        }
        for a in sheet.attestations.items
    ]
    next_page = sheet.attestations.next
    return {
        "key": key,
        "rotatedFrom": sheet.rotatedFrom,
        "attested": attested,
        "next": f"/keys/{key.keyId}?after={next_page}" if next_page else None,
        "first": f"/keys/{key.keyId}" if paged else None,
        "as_of": None,
    }

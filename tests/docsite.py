"""``python -m tests.docsite [SITE]``: the built documentation site loads nothing from another host.

Every page of ``SITE`` (default ``site/``, what ``make docs`` builds) is read, and every
attribute that makes a browser fetch something (``src``, ``srcset``, ``poster``, ``data``, and
``href`` on anything but a hyperlink ``<a>``) must name a file of the site itself, as must every
``url(…)`` of its style sheets and inline styles. A hyperlink to another host (a spec the page
cites) is fetched only when the reader follows it, and is allowed. Exit 1 lists each foreign
load as ``page: <tag attribute="url">``.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

__all__ = ["foreign_loads", "main"]

_LOADING = frozenset({"src", "srcset", "poster", "data", "href", "action", "formaction"})
_FOREIGN = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)  # http://, https://, //
_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)", re.IGNORECASE)
_IMPORT = re.compile(r"@import\s+['\"]([^'\"]+)", re.IGNORECASE)


def _foreign(url: str) -> bool:
    return bool(_FOREIGN.match(url))


class _Loads(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "style":
                self.found += [
                    f'<{tag} style="url({u})">' for u in _CSS_URL.findall(value) if _foreign(u)
                ]
            if name not in _LOADING or (name == "href" and tag == "a"):
                continue
            urls = (
                [part.strip().split(" ")[0] for part in value.split(",")]
                if name == "srcset"
                else [value]
            )
            self.found += [f'<{tag} {name}="{u}">' for u in urls if _foreign(u)]


def foreign_loads(site: Path) -> list[str]:
    """Each load from another host that a page or style sheet of ``site`` would make."""
    found: list[str] = []
    for page in sorted(site.rglob("*.html")):
        parser = _Loads()
        parser.feed(page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(site)}: {item}" for item in parser.found]
    for sheet in sorted(site.rglob("*.css")):
        text = sheet.read_text(encoding="utf-8")
        for url in [*_CSS_URL.findall(text), *_IMPORT.findall(text)]:
            if _foreign(url):
                found.append(f"{sheet.relative_to(site)}: url({url})")
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    site = Path(args[0] if args else "site")
    if not (site / "index.html").is_file():
        sys.stderr.write(f"tests.docsite: no built site in {site} (run `make docs`)\n")
        return 2
    found = foreign_loads(site)
    for item in found:
        sys.stdout.write(item + "\n")
    pages = sum(1 for _ in site.rglob("*.html"))
    if found:
        sys.stdout.write(f"{len(found)} loads from other hosts in {site}\n")
        return 1
    sys.stdout.write(f"ok: {pages} pages in {site} load nothing from another host\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

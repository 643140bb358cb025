"""The offline verifier page: one self-contained HTML file (its script and style inline, no other
resource of any kind) that checks a citation receipt or a saved signed answer in the browser,
with the log's vkey and optionally witness vkeys (``verifier.js`` says how).

It is built from ``verifier.html``, ``verifier.css``, ``verifier.js`` and the vendored
noble-ed25519 (``vendor/``: its Ed25519 fallback where the browser's WebCrypto has none, checked
against ``vendor/SHA256SUMS`` before it is used). ``benchproof verifier OUT.html`` writes it;
``GET /verify`` serves it. The page carries its own Content-Security-Policy (a ``<meta>``: no
source but its own inline script and style, so that opened from disk it can fetch nothing);
``page_hashes`` gives those two sources for the server's header.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from pathlib import Path

__all__ = ["NOBLE", "NOBLE_VERSION", "PageBuildError", "page_hashes", "page_html"]

HERE = Path(__file__).parent
VENDOR = HERE / "vendor"
NOBLE_VERSION = "3.2.0"
NOBLE = f"noble-ed25519-{NOBLE_VERSION}.js"
_EXPORT = re.compile(r"^export \{([^}]*)\};\n", re.MULTILINE)


class PageBuildError(Exception):
    """The page's parts are not what they must be (a vendored file that is not the pinned one,
    text that would end an inline element early)."""


def _vendored(name: str) -> bytes:
    """A vendored file's bytes, once its SHA-256 is the one ``SHA256SUMS`` pins.

    Raises:
        PageBuildError: it is not listed, or its bytes are not the pinned ones.
    """
    sums = {}
    for line in (VENDOR / "SHA256SUMS").read_text().splitlines():
        digest, _, file = line.partition("  ")
        sums[file] = digest
    data = (VENDOR / name).read_bytes()
    if sums.get(name) != hashlib.sha256(data).hexdigest():
        raise PageBuildError(f"vendor/{name} is not the file vendor/SHA256SUMS pins")
    return data


def _noble() -> str:
    """noble-ed25519 as a function's body: the module's one ``export { … };`` line becomes its
    return value, so that it runs in a plain inline script with its names kept to itself."""
    source = _vendored(NOBLE).decode()
    exports = _EXPORT.findall(source)
    if len(exports) != 1:
        raise PageBuildError(f"vendor/{NOBLE} must end in one export line")
    body = _EXPORT.sub("", source)
    return (
        f'const NOBLE_VERSION = "{NOBLE_VERSION}";\n'
        "// noble-ed25519 (MIT licence, vendor/LICENSE.noble-ed25519), vendored unchanged.\n"
        "const noble = (function () {\n"
        '"use strict";\n'
        f"{body}\n"
        f"return {{{exports[0].strip().rstrip(',')}}};\n"
        "})();\n"
    )


def _source(name: str, end: str) -> str:
    text = (HERE / name).read_text()
    if end in text.lower():
        raise PageBuildError(f"{name} holds {end!r}, which would end its inline element")
    return text


def _csp_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def _built() -> tuple[bytes, str, str]:
    script = _noble() + "\n" + _source("verifier.js", "</script")
    if "</script" in script.lower() or "<!--" in script:
        raise PageBuildError("the script holds text that would end its inline element")
    style = _source("verifier.css", "</style")
    script_hash, style_hash = _csp_source(script), _csp_source(style)
    # No source of any kind but the page's own inline script and style: opened from disk, it
    # can load, fetch or send nothing.
    csp = (
        f"default-src 'none'; script-src {script_hash}; style-src {style_hash}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    template = _source("verifier.html", "\0")
    page = (
        template.replace("{{csp}}", csp).replace("{{style}}", style).replace("{{script}}", script)
    )
    return page.encode(), script_hash, style_hash


def page_html() -> bytes:
    """The whole page, UTF-8.

    Raises:
        PageBuildError: a vendored file is not the pinned one, or a part would end its inline
            element early.
    """
    return _built()[0]


def page_hashes() -> tuple[str, str]:
    """The CSP sources (``'sha256-…'``) of the page's inline script and of its inline style.

    Raises:
        PageBuildError: as ``page_html``.
    """
    _, script, style = _built()
    return script, style

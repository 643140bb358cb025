"""The four ways a run record is cited: a line of text, BibTeX, biblatex and CSL-JSON.

Pure functions of a :class:`Citable`; nothing here reads the log or the clock.

Every format names the run by its permalink, the digest form ``…/runs/sha256:<hex>`` that can
only ever resolve to this one version; the short link is never cited, as a 12-hex prefix is a
convenience of the site and not an identifier a paper can rely on for ever.

LaTeX output (BibTeX and biblatex) escapes the ten characters LaTeX treats specially so they
print as themselves, and keeps every other character, non-ASCII included, as UTF-8: biblatex
with biber reads UTF-8 natively, and so does LaTeX itself (UTF-8 is its default input encoding
since 2018); classic 8-bit ``bibtex`` copies the bytes through, though it may sort such entries
oddly. Braces are written as ``\\textbraceleft{}`` and ``\\textbraceright{}`` (what ``\\{`` and
``\\}`` expand to in text) rather than ``\\{`` and ``\\}``: BibTeX and biber count a brace
whether or not a backslash stands before it, so one unpaired ``\\{`` in a title would swallow
the rest of the file.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlsplit

import msgspec

__all__ = [
    "EVIDENCE_LEVELS",
    "Citable",
    "biblatex",
    "bibtex",
    "citation_key",
    "csl_json",
    "latex_escape",
    "text",
]

EVIDENCE_LEVELS = frozenset(
    {
        "reported",
        "reproducible",
        "verified",
        "replicated",
        "disputed",
        "retracted",
        "superseded",
    }
)

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")

_LATEX = {
    "\\": r"\textbackslash{}",
    "{": r"\textbraceleft{}",
    "}": r"\textbraceright{}",
    "$": r"\$",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


class Citable(msgspec.Struct, frozen=True, kw_only=True):
    """What a citation of one version of a run record says."""

    title: str
    permalink: str  # https://host/runs/sha256:<hex>, the digest form only
    short_link: str | None  # https://host/runs/<12 hex>; shown on the page, never cited
    run_digest: str  # sha256:<64 hex>
    accessed: datetime  # an aware instant; its UTC date is the access date
    evidence_level: str  # one of EVIDENCE_LEVELS, as it stood at access
    issued: date | None  # when the result was published or observed, if known
    source: str  # the source's display name, cited as its (corporate) author
    publisher: str = "Benchproof"


def citation_key(c: Citable) -> str:
    """The entry's key: stable for a version, as it comes from the digest alone."""
    return "benchproof-" + _digest(c).removeprefix("sha256:")[:12]


def text(c: Citable) -> str:
    """One plain line to paste into a paper's reference list.

    No full stop follows the permalink, so that nothing that links URLs takes it in.
    """
    title = _one_line(c.title)
    issued = f", {c.issued.isoformat()}" if c.issued is not None else ""
    return (
        f"{_stop(title)} {_one_line(c.source)}{issued}. {_one_line(c.publisher)}. "
        f"{_permalink(c)} (digest {_digest(c)}; {_evidence(c)}; accessed {_accessed(c)})"
    )


def bibtex(c: Citable) -> str:
    """A BibTeX ``@misc`` entry (the type every standard style has).

    The source is the author, braced so it is read as one corporate name; the permalink is in
    ``howpublished`` as ``\\url{…}`` (the ``url`` or ``hyperref`` package); the access date,
    which ``@misc`` has no field for, is in ``note`` with the digest and the evidence level.
    """
    fields = [
        ("title", "{" + latex_escape(c.title) + "}"),
        ("author", "{" + latex_escape(c.source) + "}"),
        ("howpublished", r"\url{" + _permalink(c) + "}"),
        ("publisher", latex_escape(c.publisher)),
    ]
    month: str | None = None
    if c.issued is not None:
        fields.append(("year", str(c.issued.year)))
        month = _MONTHS[c.issued.month - 1]
    note = f"Run digest {_digest(c)}; {_evidence(c)}; accessed {_accessed(c)}"
    fields.append(("note", latex_escape(note)))
    return _entry("misc", citation_key(c), fields, month=month)


def biblatex(c: Citable) -> str:
    """A biblatex ``@online`` entry (for biber).

    The source is the author and the publisher the ``organization``, both braced so that each
    is read as one corporate name (both are name lists, split at " and "); ``url`` is a
    verbatim field and ``urldate`` the UTC date of access.
    """
    fields = [
        ("title", "{" + latex_escape(c.title) + "}"),
        ("author", "{" + latex_escape(c.source) + "}"),
        ("organization", "{" + latex_escape(c.publisher) + "}"),
    ]
    if c.issued is not None:
        fields.append(("date", c.issued.isoformat()))
    fields += [
        ("url", _permalink(c)),
        ("urldate", _accessed(c)),
        ("note", latex_escape(f"Run digest {_digest(c)}; {_evidence(c)}")),
    ]
    return _entry("online", citation_key(c), fields)


def csl_json(c: Citable) -> dict[str, Any]:
    """One CSL-JSON item (a list of them is what CSL processors read).

    Its type is ``dataset``: since CSL 1.0.2 that is the type for recorded data, which a run
    record is; ``webpage`` would cite the HTML page around it. Styles with no rule for
    ``dataset`` fall back to their generic form, which still prints the title, the URL and the
    access date. The digest and the evidence level are under ``custom`` (the schema allows no
    other top-level key) for machines, and in ``note`` for people. The key is the item's ``id``
    (what pandoc cites it by); ``citation-key``, new in CSL 1.0.2, is left out, as processors
    older than it (citeproc-py among them) stumble on it.
    """
    accessed = _access_date(c)
    item: dict[str, Any] = {
        "id": citation_key(c),
        "type": "dataset",
        "title": c.title,
        "author": [{"literal": c.source}],
        "publisher": c.publisher,
        "URL": _permalink(c),
        "accessed": {"date-parts": [[accessed.year, accessed.month, accessed.day]]},
    }
    if c.issued is not None:
        item["issued"] = {"date-parts": [[c.issued.year, c.issued.month, c.issued.day]]}
    item["note"] = f"Run digest {_digest(c)}; {_evidence(c)}"
    item["custom"] = {"run_digest": c.run_digest, "evidence_level_at_access": c.evidence_level}
    return item


def latex_escape(s: str) -> str:
    """``s`` as LaTeX that prints it literally (see the module's docstring for braces).

    Control characters and line or paragraph separators become spaces: a blank line would end
    the paragraph in the middle of an argument.
    """
    return "".join(_LATEX.get(ch, ch) for ch in _one_line(s))


def _entry(kind: str, key: str, fields: list[tuple[str, str]], *, month: str | None = None) -> str:
    """An entry with each value braced; ``month`` is the standard macro (``jan``…), unbraced."""
    lines = [f"@{kind}{{{key},"]
    for name, value in fields:
        lines.append(f"  {name} = {{{value}}},")
        if name == "year" and month is not None:
            lines.append(f"  month = {month},")
    lines[-1] = lines[-1].removesuffix(",")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _one_line(s: str) -> str:
    """``s`` with each control character and line or paragraph separator made a space."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in s)


def _stop(s: str) -> str:
    """``s`` ended by a full stop, unless it ends with sentence punctuation already."""
    return s if s.endswith((".", "!", "?")) else s + "."


def _digest(c: Citable) -> str:
    if _DIGEST.fullmatch(c.run_digest) is None:
        raise ValueError(f"run_digest must be sha256:<64 lowercase hex>, not {c.run_digest!r}")
    return c.run_digest


def _permalink(c: Citable) -> str:
    """The permalink, checked to be the digest form of this run and safe inside ``\\url{}``.

    Raises:
        ValueError: it holds a brace, a backslash, whitespace or anything but printable ASCII,
            is not an absolute http(s) URL, or does not end in ``/runs/<run_digest>``.
    """
    link = c.permalink
    if any(ch in "{}\\" or not ("!" <= ch <= "~") for ch in link):
        raise ValueError(
            "the permalink must be printable ASCII with no brace, backslash or whitespace"
        )
    parts = urlsplit(link)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ValueError(f"the permalink must be an absolute http(s) URL, not {link!r}")
    if parts.query or parts.fragment or link.endswith(("?", "#")):
        raise ValueError("the permalink has no query or fragment")
    if not parts.path.endswith("/runs/" + _digest(c)):
        raise ValueError(f"the permalink must end in /runs/{c.run_digest}, not {link!r}")
    return link


def _evidence(c: Citable) -> str:
    if c.evidence_level not in EVIDENCE_LEVELS:
        raise ValueError(f"unknown evidence level {c.evidence_level!r}")
    return f"evidence level at access: {c.evidence_level}"


def _access_date(c: Citable) -> date:
    """The UTC date of access.

    Raises:
        ValueError: ``accessed`` is naive (no zone, so no date can be told for sure).
    """
    if c.accessed.tzinfo is None or c.accessed.utcoffset() is None:
        raise ValueError("accessed must be an aware instant")
    return c.accessed.astimezone(UTC).date()


def _accessed(c: Citable) -> str:
    """The UTC date of access, YYYY-MM-DD."""
    return _access_date(c).isoformat()

"""The four citation formats of a run record, each read back by a tool of its own kind.

BibTeX and biblatex are parsed with bibtexparser (2.x, no LaTeX decoding: the values come back
as written), CSL-JSON is validated against the CSL schema (tests/vendor/csl-data.json) and
rendered with citeproc-py, and the text line is read as it is.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import bibtexparser
import pytest
from bibtexparser.model import Entry
from citeproc import Citation, CitationItem, CitationStylesBibliography, CitationStylesStyle
from citeproc import formatter as citeproc_formatter
from citeproc.source.json import CiteProcJSON
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from service.app import citeformats
from service.app.citeformats import Citable

HEX = "3f1a9c0e5b7d24c8a6e1f0b39d2c7e45" + "81aa0c6f9e3d2b1745c8e0f6a9b3d7c1"
DIGEST = "sha256:" + HEX
PERMALINK = "https://bench.example.org/runs/" + DIGEST
SHORT = "https://bench.example.org/runs/" + HEX[:12]
KEY = "benchproof-" + HEX[:12]
NASTY = "rms_norm & 50% #1 {x} ~y^2 \\ $5 Größe ✓"
NASTY_LATEX = (
    r"rms\_norm \& 50\% \#1 \textbraceleft{}x\textbraceright{} \textasciitilde{}y"
    r"\textasciicircum{}2 \textbackslash{} \$5 Größe ✓"
)
SCHEMA = json.loads((Path(__file__).parents[1] / "vendor" / "csl-data.json").read_text("utf-8"))


def _citable(**changes: Any) -> Citable:
    fields: dict[str, Any] = {
        "title": "rmsnorm_fwd by liger on NVIDIA H100",
        "permalink": PERMALINK,
        "short_link": SHORT,
        "run_digest": DIGEST,
        "accessed": datetime(2025, 3, 4, 9, 30, tzinfo=UTC),
        "evidence_level": "verified",
        "issued": date(2025, 2, 1),
        "source": "Liger-Kernel",
    }
    fields.update(changes)
    return Citable(**fields)


def _parse(entry: str) -> Entry:
    library = bibtexparser.parse_string(entry)
    assert library.failed_blocks == []
    assert len(library.entries) == 1
    return library.entries[0]


def _fields(entry: Entry) -> dict[str, str]:
    return {field.key: field.value for field in entry.fields}


def _unbrace(value: str) -> str:
    """The inside of the pair of braces that protects a title or a corporate name."""
    assert value.startswith("{") and value.endswith("}"), value
    return value[1:-1]


_UNESCAPE = {
    r"\textbackslash{}": "\\",
    r"\textbraceleft{}": "{",
    r"\textbraceright{}": "}",
    r"\textasciitilde{}": "~",
    r"\textasciicircum{}": "^",
    r"\$": "$",
    r"\&": "&",
    r"\%": "%",
    r"\#": "#",
    r"\_": "_",
}
_ESCAPED = re.compile("|".join(re.escape(form) for form in _UNESCAPE))


def _latex_unescape(s: str) -> str:
    """The inverse of ``citeformats.latex_escape`` on printable text.

    The escaped text has no backslash outside the forms above, so one scan from the left
    cannot misread them.
    """
    return _ESCAPED.sub(lambda m: _UNESCAPE[m.group()], s)


def _balanced_as_bibtex_counts(entry: str) -> bool:
    """Whether every brace pairs up, counting ``\\{`` and ``\\}`` as BibTeX and biber do."""
    depth = 0
    for ch in entry:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _render_harvard(item: dict[str, Any]) -> str:
    # citeproc-py predates the schema's `custom` object and warns at it (an error here), so
    # the item it renders is the one without it; `custom` is for machines, never printed.
    printable = {k: v for k, v in item.items() if k != "custom"}
    style = CitationStylesStyle("harvard-cite-them-right", locale="en-GB", validate=False)
    bibliography = CitationStylesBibliography(
        style, CiteProcJSON([printable]), citeproc_formatter.plain
    )
    bibliography.register(Citation([CitationItem(item["id"])]))
    (entry,) = bibliography.bibliography()
    return str(entry)


# -- text -----------------------------------------------------------------------------------


def test_text_is_one_line_with_every_part() -> None:
    assert citeformats.text(_citable()) == (
        "rmsnorm_fwd by liger on NVIDIA H100. Liger-Kernel, 2025-02-01. Benchproof. "
        f"{PERMALINK} (digest {DIGEST}; evidence level at access: verified; accessed 2025-03-04)"
    )


def test_text_without_an_issue_date_and_with_a_title_that_ends_its_sentence() -> None:
    line = citeformats.text(_citable(title="Is it fast?", issued=None))
    assert line.startswith("Is it fast? Liger-Kernel. Benchproof. ")


def test_text_keeps_special_characters_and_folds_line_breaks() -> None:
    assert citeformats.text(_citable(title=NASTY)).startswith(NASTY + ". ")
    assert citeformats.text(_citable(title="two\nlines\u2028here")).startswith("two lines here. ")
    assert "\n" not in citeformats.text(_citable(title="a\r\nb"))


# -- BibTeX ---------------------------------------------------------------------------------


def test_bibtex_fields() -> None:
    written = citeformats.bibtex(_citable())
    entry = _parse(written)
    assert (entry.entry_type, entry.key) == ("misc", KEY)
    fields = _fields(entry)
    assert _unbrace(fields["title"]) == r"rmsnorm\_fwd by liger on NVIDIA H100"
    assert _unbrace(fields["author"]) == "Liger-Kernel"
    assert fields["howpublished"] == r"\url{" + PERMALINK + "}"
    assert fields["publisher"] == "Benchproof"
    assert (fields["year"], fields["month"]) == ("2025", "feb")
    assert fields["note"] == (
        f"Run digest {DIGEST}; evidence level at access: verified; accessed 2025-03-04"
    )
    assert "  month = feb,\n" in written  # the standard macro, unquoted


def test_bibtex_without_an_issue_date_has_no_year_or_month() -> None:
    fields = _fields(_parse(citeformats.bibtex(_citable(issued=None))))
    assert "year" not in fields and "month" not in fields
    assert "accessed 2025-03-04" in fields["note"]


def test_bibtex_escapes_special_characters() -> None:
    written = citeformats.bibtex(_citable(title=NASTY, source="A&B_Lab #1"))
    assert "  title = {{" + NASTY_LATEX + "}},\n" in written
    assert _balanced_as_bibtex_counts(written)
    fields = _fields(_parse(written))
    assert _unbrace(fields["title"]) == NASTY_LATEX
    assert _latex_unescape(_unbrace(fields["title"])) == NASTY
    assert _unbrace(fields["author"]) == r"A\&B\_Lab \#1"


def test_an_unpaired_brace_leaves_the_entry_balanced() -> None:
    # BibTeX counts `\{` as a brace too, so a lone `\{` would run past the entry's end.
    for title in ("open { only", "close } only", "}{"):
        written = citeformats.bibtex(_citable(title=title))
        assert _balanced_as_bibtex_counts(written), written
        assert _latex_unescape(_unbrace(_fields(_parse(written))["title"])) == title


# -- biblatex -------------------------------------------------------------------------------


def test_biblatex_fields() -> None:
    entry = _parse(citeformats.biblatex(_citable()))
    assert (entry.entry_type, entry.key) == ("online", KEY)
    fields = _fields(entry)
    assert _unbrace(fields["title"]) == r"rmsnorm\_fwd by liger on NVIDIA H100"
    assert _unbrace(fields["author"]) == "Liger-Kernel"
    assert _unbrace(fields["organization"]) == "Benchproof"
    assert fields["url"] == PERMALINK
    assert fields["urldate"] == "2025-03-04"
    assert fields["date"] == "2025-02-01"
    assert fields["note"] == f"Run digest {DIGEST}; evidence level at access: verified"


def test_biblatex_without_an_issue_date_has_no_date() -> None:
    fields = _fields(_parse(citeformats.biblatex(_citable(issued=None))))
    assert "date" not in fields
    assert fields["urldate"] == "2025-03-04"


def test_biblatex_escapes_special_characters() -> None:
    written = citeformats.biblatex(_citable(title=NASTY))
    assert "  title = {{" + NASTY_LATEX + "}},\n" in written
    assert _balanced_as_bibtex_counts(written)
    assert _latex_unescape(_unbrace(_fields(_parse(written))["title"])) == NASTY


# -- CSL-JSON -------------------------------------------------------------------------------


def _valid_csl(item: dict[str, Any]) -> None:
    # The item must survive JSON as it is: what a client downloads is its JSON text.
    as_json = json.loads(json.dumps(item, ensure_ascii=False))
    assert as_json == item
    errors = [e.message for e in Draft7Validator(SCHEMA).iter_errors([as_json])]
    assert errors == []


def test_the_vendored_schema_is_a_valid_draft7_schema() -> None:
    Draft7Validator.check_schema(SCHEMA)


def test_csl_json_item() -> None:
    item = citeformats.csl_json(_citable())
    _valid_csl(item)
    assert item == {
        "id": KEY,
        "type": "dataset",
        "title": "rmsnorm_fwd by liger on NVIDIA H100",
        "author": [{"literal": "Liger-Kernel"}],
        "publisher": "Benchproof",
        "URL": PERMALINK,
        "accessed": {"date-parts": [[2025, 3, 4]]},
        "issued": {"date-parts": [[2025, 2, 1]]},
        "note": f"Run digest {DIGEST}; evidence level at access: verified",
        "custom": {"run_digest": DIGEST, "evidence_level_at_access": "verified"},
    }


def test_csl_json_without_an_issue_date_omits_it() -> None:
    item = citeformats.csl_json(_citable(issued=None))
    _valid_csl(item)
    assert "issued" not in item


def test_the_schema_refuses_what_csl_json_forbids() -> None:
    # The check above has teeth: an unknown top-level key or type is refused.
    item = citeformats.csl_json(_citable())
    assert not Draft7Validator(SCHEMA).is_valid([{**item, "run_digest": DIGEST}])
    assert not Draft7Validator(SCHEMA).is_valid([{**item, "type": "benchmark"}])


def test_csl_json_keeps_special_characters_and_control_characters_exactly() -> None:
    for title in (NASTY, "tab\there\nand a line"):
        item = citeformats.csl_json(_citable(title=title))
        _valid_csl(item)
        assert item["title"] == title
        assert json.loads(json.dumps([item]))[0]["title"] == title


def test_csl_json_renders_with_citeproc() -> None:
    rendered = _render_harvard(citeformats.csl_json(_citable()))
    assert "rmsnorm_fwd by liger on NVIDIA H100" in rendered
    assert PERMALINK in rendered
    assert "4 March 2025" in rendered
    assert "Liger-Kernel" in rendered
    assert "(2025)" in rendered


def test_csl_json_with_special_characters_renders_them_literally() -> None:
    rendered = _render_harvard(citeformats.csl_json(_citable(title=NASTY)))
    assert NASTY in rendered


# -- what every format shares ---------------------------------------------------------------

FORMATS = [
    citeformats.text,
    citeformats.bibtex,
    citeformats.biblatex,
    lambda c: json.dumps(citeformats.csl_json(c)),
]


@pytest.mark.parametrize("render", FORMATS)
def test_every_format_cites_the_digest_permalink_and_never_the_short_link(render: Any) -> None:
    out = render(_citable())
    assert PERMALINK in out
    assert DIGEST in out.replace(PERMALINK, "")  # the digest stands on its own too
    assert SHORT + " " not in out and not re.search(re.escape(SHORT) + r"(?!\w)", out)


@pytest.mark.parametrize(
    "permalink",
    [
        PERMALINK + "{",
        PERMALINK.replace("bench.", "bench{}."),
        PERMALINK.replace("https://", "https:\\\\"),
        PERMALINK + " ",
        PERMALINK.replace("/runs/", "/runs /"),
        PERMALINK + "\n",
        "https://bench.example.org/runs/\t" + DIGEST,
        SHORT,  # the short form is not a permalink
        "https://bench.example.org/runs/sha256:" + "0" * 64,  # another run's
        "/runs/" + DIGEST,  # relative
        "bench.example.org/runs/" + DIGEST,
        "ftp://bench.example.org/runs/" + DIGEST,
        PERMALINK + "?v=1",
        PERMALINK + "#top",
        PERMALINK + "/",
        "https://bench.example.org/runs/" + DIGEST.upper(),
        "https://bénch.example.org/runs/" + DIGEST,
    ],
)
@pytest.mark.parametrize("render", FORMATS)
def test_a_bad_permalink_is_refused(permalink: str, render: Any) -> None:
    with pytest.raises(ValueError, match="permalink"):
        render(_citable(permalink=permalink))


@pytest.mark.parametrize("render", FORMATS)
def test_a_permalink_under_a_path_prefix_is_accepted(render: Any) -> None:
    link = "http://localhost:8000/index/runs/" + DIGEST
    assert link in render(_citable(permalink=link))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"run_digest": "sha256:" + HEX[:-1]}, "run_digest"),
        ({"run_digest": HEX}, "run_digest"),
        ({"run_digest": "sha256:" + HEX.upper()}, "run_digest"),
        ({"evidence_level": "great"}, "evidence level"),
        ({"accessed": datetime(2025, 3, 4, 9, 30)}, "aware"),  # naive: no date can be told
    ],
)
@pytest.mark.parametrize("render", FORMATS)
def test_malformed_fields_are_refused(changes: dict[str, Any], message: str, render: Any) -> None:
    if "run_digest" in changes:  # a permalink that matches, so the digest itself is judged
        changes = {**changes, "permalink": "https://h.example/runs/" + changes["run_digest"]}
    with pytest.raises(ValueError, match=message):
        render(_citable(**changes))


def test_the_access_date_is_the_utc_date() -> None:
    late_in_new_york = datetime(2025, 3, 4, 21, 30, tzinfo=timezone(timedelta(hours=-5)))
    c = _citable(accessed=late_in_new_york)
    assert citeformats.text(c).endswith("accessed 2025-03-05)")
    assert "accessed 2025-03-05" in citeformats.bibtex(c)
    assert _fields(_parse(citeformats.biblatex(c)))["urldate"] == "2025-03-05"
    assert citeformats.csl_json(c)["accessed"] == {"date-parts": [[2025, 3, 5]]}


def test_the_key_comes_from_the_digest_alone() -> None:
    a, b = _citable(), _citable(title="another", source="x", evidence_level="disputed")
    assert citeformats.citation_key(a) == citeformats.citation_key(b) == KEY
    assert _parse(citeformats.bibtex(b)).key == _parse(citeformats.biblatex(b)).key == KEY
    assert citeformats.csl_json(b)["id"] == KEY


def test_every_evidence_level_is_cited() -> None:
    for level in sorted(citeformats.EVIDENCE_LEVELS):
        c = _citable(evidence_level=level)
        assert f"evidence level at access: {level}" in citeformats.text(c)
        assert citeformats.csl_json(c)["custom"]["evidence_level_at_access"] == level


# -- any printable title --------------------------------------------------------------------

# Python's printable: no control, format, surrogate, private-use, unassigned or separator
# character but the ASCII space. The LaTeX specials and BibTeX's own syntax are drawn often.
_PRINTABLE = st.characters(
    codec="utf-8",
    exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"),
    include_characters=" ",
)
_TITLES = st.text(st.one_of(st.sampled_from("\\{}$&%#_~^ @\"=,()'"), _PRINTABLE), max_size=60)


@settings(max_examples=300, deadline=None)
@given(title=_TITLES, source=_TITLES)
def test_any_printable_title_round_trips_through_bibtex(title: str, source: str) -> None:
    assert title.isprintable()
    for written in (
        citeformats.bibtex(_citable(title=title, source=source)),
        citeformats.biblatex(_citable(title=title, source=source)),
    ):
        assert _balanced_as_bibtex_counts(written)
        fields = _fields(_parse(written))
        assert _latex_unescape(_unbrace(fields["title"])) == title
        assert _latex_unescape(_unbrace(fields["author"])) == source
        assert DIGEST in fields["note"]


@settings(max_examples=100, deadline=None)
@given(title=_TITLES)
def test_any_printable_title_is_kept_by_csl_json_and_text(title: str) -> None:
    c = _citable(title=title)
    item = citeformats.csl_json(c)
    _valid_csl(item)
    assert item["title"] == title
    assert citeformats.text(c).startswith(title)

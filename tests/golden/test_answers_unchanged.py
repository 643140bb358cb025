"""Every JSON answer and page of the catalog's log is byte-identical to what the code before the
issue 26 refactor answered (``answers-catalog.json.gz``, written by ``python -m
tests.golden.answers --write``): the status, the headers users see and the body.

The default test asks a deterministic sample (every kind of request, a few hundred runs); the
whole crawl (every run, group, listing page, log page and tile) runs with
``BENCHPROOF_GOLDEN=full`` (``make test-golden``), in ``BENCHPROOF_GOLDEN_JOBS`` processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.corpora import CATALOG, corpus
from tests.golden import answers

pytestmark = pytest.mark.corpus

FULL = os.environ.get("BENCHPROOF_GOLDEN") == "full"
JOBS = int(os.environ.get("BENCHPROOF_GOLDEN_JOBS", "1"))  # processes of the whole crawl


def check(tmp_path: Path, *, full: bool, jobs: int = 1) -> answers.Collected:
    corpus(*CATALOG)  # skipped (or failed in CI) without the corpora
    golden = answers.load()
    collected = answers.collect(tmp_path, full=full, jobs=jobs)
    differences = answers.compare(golden, collected.records, whole=full)
    assert not differences, answers.report(differences)
    return collected


def test_a_sample_of_the_answers_is_unchanged(tmp_path: Path) -> None:
    collected = check(tmp_path, full=False)
    kinds = {r.ask.kind for r in collected.records}
    golden = answers.load()
    # The sample asks every kind of request the whole crawl asks.
    assert kinds == set(golden["counts"]), set(golden["counts"]) ^ kinds
    assert collected.size == golden["treeSize"]


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="the whole crawl runs with BENCHPROOF_GOLDEN=full")
def test_every_answer_is_unchanged(tmp_path: Path) -> None:
    check(tmp_path, full=True, jobs=JOBS)

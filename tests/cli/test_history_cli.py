"""``benchproof runs history RUN [--as-of X] [--json]`` on a data directory: every entry that
touched a run, in log order, as a table or as the API's JSON; a bad reference or ``--as-of`` is
one line on stderr and exit 3 or 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from events.types import ReportFiled, RunRetracted
from service.core.init import init_data_dir
from tests.builders import bundle, ingest_event
from tests.cli.conftest import Runner


class Story:
    def __init__(self, data: Path, run: str, rival: str, at: list[int]) -> None:
        self.data = data
        self.run = run
        self.rival = rival
        self.at = at  # positions: the run's ingest, the rival's, the report, the retraction


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    """A run that leads its group, a better rival that takes the lead, a report on the run,
    then the rival retracted (the run leads again)."""
    data = tmp_path_factory.mktemp("history") / "data"
    ledger, _ = init_data_dir(data)
    at = []
    with ledger:
        digests = []
        for author, value in ((1, 100), (2, 50)):
            parts = bundle(group=1, author=author, value=value)
            digest = parts["run"].digest
            at.append(ledger.append([(ingest_event(parts), digest)])[0].seq)
            digests.append(digest)
        run, rival = digests
        report = ReportFiled(runDigest=run, category="other", text="odd")
        at.append(ledger.append([(report, run)])[0].seq)
        retraction = RunRetracted(runDigest=rival, reason="bad data")
        at.append(ledger.append([(retraction, rival)])[0].seq)
    return Story(data, run, rival, at)


def test_the_history_as_json(bp: Runner, story: Story) -> None:
    out = bp("runs", "history", story.run[7:19], "--json", "--data", story.data)
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["runDigest"] == story.run and body["asOf"] == story.at[-1] + 1
    entries = body["entries"]
    assert [e["position"] for e in entries] == story.at
    assert [e["kinds"] for e in entries] == [
        ["ingest", "evidence", "rank", "leader"],
        ["rank", "leader"],
        ["report"],
        ["rank", "leader"],
    ]
    rival = story.rival[7:19]
    assert entries[1]["event"] == (
        f"rank #1 → #2 in its group; lost the group lead to {rival} (run {rival} ingested)"
    )
    assert entries[3]["event"] == (
        f"rank #2 → #1 in its group; became group leader after {rival} (run {rival} retracted)"
    )
    assert all(e["signer"]["name"] == "index" for e in entries)
    size = body["asOf"]
    assert entries[0]["links"]["proof"] == (
        f"/v1/log/proof/inclusion?index={story.at[0]}&size={size}"
    )
    # The proof the link names is the one the log command prints.
    proof = bp("log", "proof", "inclusion", str(story.at[0]), str(size), "--data", story.data)
    assert proof.returncode == 0, proof.stderr
    assert json.loads(proof.stdout)["treeSize"] == size


def test_the_history_as_a_table_and_as_of(bp: Runner, story: Story) -> None:
    out = bp("--data", story.data, "runs", "history", story.run)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"History of run {story.run[7:19]} as of tree size {story.at[-1] + 1}"
    assert len(lines) == 1 + len(story.at)
    assert "run.ingested.v1" in lines[1] and "index" in lines[1]
    assert lines[1].endswith("became group leader  [reported]")
    assert "report filed: other" in lines[3]
    cut = bp(
        "runs", "history", story.run, "--as-of", str(story.at[2]), "--json", "--data", story.data
    )
    assert cut.returncode == 0, cut.stderr
    body = json.loads(cut.stdout)
    assert body["asOf"] == story.at[2]
    assert [e["position"] for e in body["entries"]] == story.at[:2]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["sha256:" + "0" * 64], 3),
        (["nonsense"], 2),  # malformed
        (["RUN", "--as-of", "yesterday"], 2),
        (["RUN", "--as-of", "999999"], 2),
        (["RUN", "--as-of", "0"], 3),  # not in the log yet
    ],
)
def test_bad_references_and_as_of(bp: Runner, story: Story, args: list[str], code: int) -> None:
    args = [story.run if a == "RUN" else a for a in args]
    out = bp("runs", "history", *args, "--data", story.data)
    assert out.returncode == code, out.stderr
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1, out.stderr

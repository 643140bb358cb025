"""Issue 18, point 4 in process: hypothesis fuzzing of every parser.

Each parser gets valid inputs (from the shared corpora and tests/fixtures) mutated by
structure (a JSON or YAML value with one member replaced, dropped, retyped or repeated; a CSV
cell or column changed) and byte by byte (flips, cuts, splices), and random bytes. A parser
may refuse what it is given only with the project's documented errors (``EventError``,
``KeyringError``, ``ServiceError``, ``VerifierError``, ``ProjectionError``): anything else (a ``KeyError``, a
``RecursionError``, a ``UnicodeDecodeError``…) is a crash the edges would turn into a 5xx or a
traceback."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from events.checkpoints import parse_checkpoint_body
from events.decoding import statement_event
from events.documents import check_manifest, check_manifest_json, read_documents
from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE
from events.errors import EventError
from events.tiles import decode_bundle, encode_bundle, parse_path
from events.yamlcore import load_yaml
from keys.dsse import decode_envelope, encode_envelope, sign_envelope, verify_envelope
from keys.ed25519 import SigningKey
from keys.errors import KeyringError
from keys.notekeys import NoteSigner, NoteVerifier, parse_vkey
from keys.notes import open_note, sign_note
from projections.errors import ProjectionError
from service.app.attest import statement_of
from service.app.keys import read_envelope
from service.errors import ServiceError
from service.ingest.api import plan_import
from tests.corpora import corpus, shared_file
from tests.reliability.report import fuzzing, record_inputs, scale
from tests.servers import run_cli
from verifier.errors import VerifierError
from verifier.receipts import parse as parse_receipt
from verifier.receipts import verify_receipt

DOCUMENTED = (EventError, KeyringError, ServiceError, VerifierError, ProjectionError)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
EXAMPLES = scale(25, 300)
IMPORT_EXAMPLES = scale(12, 120)

# --- mutation strategies -------------------------------------------------------------------

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, -(10**30), 2**63, -(2**63) - 1, 0]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["", "\x00", "\ud7ff", "../../etc/passwd", "1e999", "NaN", " ", "-1"]),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)


def _slots(value: Any, out: list[tuple[Any, Any]]) -> None:
    """Every (container, key) of ``value``, depth first."""
    if isinstance(value, dict):
        for key in list(value):
            out.append((value, key))
            _slots(value[key], out)
    elif isinstance(value, list):
        for index in range(len(value)):
            out.append((value, index))
            _slots(value[index], out)


@st.composite
def mutated_value(draw: st.DrawFn, value: Any) -> Any:
    """``value`` (a JSON value, copied) with one to three members changed."""
    value = json.loads(json.dumps(value))
    for _ in range(draw(st.integers(1, 3))):
        slots: list[tuple[Any, Any]] = []
        _slots(value, slots)
        if not slots:
            return draw(json_value)
        container, key = slots[draw(st.integers(0, len(slots) - 1))]
        action = draw(st.sampled_from(["replace", "drop", "retype", "grow"]))
        if action == "drop":
            del container[key]
        elif action == "retype":
            old = container[key]
            container[key] = (
                str(old) if not isinstance(old, str) else draw(st.sampled_from([0, [], {}, None]))
            )
        elif action == "grow" and isinstance(container, dict):
            container[draw(st.text(max_size=8))] = draw(json_value)
        else:
            container[key] = draw(json_value)
    return value


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` flipped, cut, spliced or extended at random places."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(out)))
        action = draw(st.sampled_from(["flip", "cut", "insert", "truncate", "repeat"]))
        if action == "flip" and at < len(out):
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "cut":
            del out[at : at + draw(st.integers(1, 16))]
        elif action == "insert":
            out[at:at] = draw(
                st.one_of(
                    st.binary(max_size=8),
                    st.sampled_from([b"\x00", b"\xff", b"\xc3", b"{", b"[", b'"', b"\n", b","]),
                )
            )
        elif action == "truncate":
            del out[at:]
        else:
            out[at:at] = out[at : at + draw(st.integers(1, 32))]
    return bytes(out)


def inputs(seeds: list[bytes], structured: Callable[[bytes], st.SearchStrategy[bytes]]) -> Any:
    """Random bytes, byte mutations of a seed, or a structural mutation of one."""
    return st.one_of(
        st.binary(max_size=256),
        st.sampled_from(seeds).flatmap(mutated_bytes),
        st.sampled_from(seeds).flatmap(structured),
    )


def json_mutations(data: bytes) -> st.SearchStrategy[bytes]:
    value = json.loads(data)
    return mutated_value(value).map(lambda v: json.dumps(v, ensure_ascii=False).encode())


def yaml_mutations(data: bytes) -> st.SearchStrategy[bytes]:
    value = load_yaml(data)[0]  # timestamps stay strings, as KernelIndex reads them
    return mutated_value(value).map(
        lambda v: yaml.safe_dump(v, allow_unicode=True).encode("utf-8", "surrogatepass")
    )


def jsonl_mutations(data: bytes) -> st.SearchStrategy[bytes]:
    lines = [json.loads(line) for line in data.splitlines() if line.strip()]
    return mutated_value(lines).map(
        lambda v: (
            b"\n".join(json.dumps(x, ensure_ascii=False).encode() for x in v)
            if isinstance(v, list)
            else json.dumps(v).encode()
        )
    )


@st.composite
def csv_mutations(draw: st.DrawFn, data: bytes) -> bytes:
    rows = [line.split(b",") for line in data.splitlines()]
    for _ in range(draw(st.integers(1, 3))):
        row = rows[draw(st.integers(0, len(rows) - 1))]
        if not row:  # emptied by an earlier change
            continue
        at = draw(st.integers(0, len(row) - 1))
        action = draw(st.sampled_from(["cell", "drop", "duplicate-row", "empty"]))
        if action == "cell":
            row[at] = draw(
                st.one_of(
                    st.text(max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass")),
                    st.sampled_from([b"NaN", b"inf", b"-1", b"1e400", b'"', b'""', b"\x00", b""]),
                )
            )
        elif action == "drop":
            del row[at]
        elif action == "duplicate-row":
            rows.append(list(row))
        else:
            rows[rows.index(row)] = []
    return b"\n".join(b",".join(r) for r in rows)


def fuzz(
    name: str,
    strategy: st.SearchStrategy[bytes],
    parse: Callable[[bytes], object],
    examples: int = EXAMPLES,
) -> None:
    """Feed ``examples`` inputs to ``parse``; only documented errors may come out."""
    tried = 0
    crashes: list[str] = []

    @fuzzing(examples)
    @given(data=strategy)
    def run(data: bytes) -> None:
        nonlocal tried
        tried += 1
        try:
            parse(data)
        except DOCUMENTED:
            pass
        except Exception as exc:  # noqa: BLE001 - any other error is the finding
            crashes.append(f"{type(exc).__name__}: {exc!s:.200} on {data[:120]!r}")

    run()
    record_inputs(f"parser {name}", tried=tried, server_errors=len(crashes))
    assert not crashes, f"{name}: {len(crashes)} undocumented errors:\n" + "\n".join(crashes[:10])


# --- manifests, YAML, envelopes, statements -------------------------------------------------


def manifest_seeds() -> list[bytes]:
    folder = corpus("kernelindex-manifests", "examples")
    return [p.read_bytes() for p in sorted(folder.glob("*.yaml"))]


def _read_manifests(data: bytes, source: str) -> None:
    for doc in read_documents(data, source=source):
        if isinstance(doc, dict):
            for role, value in doc.items() if "kind" not in doc else [("$", doc)]:
                check_manifest(value, source=source, path=f"$.{role}")
        else:
            check_manifest(doc, source=source)


def test_manifests_json() -> None:
    seeds = [shared_file("seed-manifest.json").read_bytes()] + [
        json.dumps(load_yaml(y)[0]).encode() for y in manifest_seeds()
    ]
    fuzz("manifest (JSON)", inputs(seeds, json_mutations), lambda d: _read_manifests(d, "m.json"))
    fuzz(
        "manifest (JSON, typed decode)",
        inputs(seeds, json_mutations),
        lambda d: check_manifest_json(d, source="m.json"),
    )


def test_manifests_yaml_and_the_yaml_loader() -> None:
    seeds = manifest_seeds()
    fuzz("manifest (YAML)", inputs(seeds, yaml_mutations), lambda d: _read_manifests(d, "m.yaml"))
    fuzz(
        "yaml loader (events.yamlcore)",
        st.one_of(
            inputs(seeds, yaml_mutations),
            st.sampled_from(
                [
                    b"a: &x [*x]",
                    b"!!binary aGk=",
                    b"a: 1\na: 2",
                    b"? [a]\n: 1",
                    b"[" * 5000,
                    b"a: !!python/object:os.system x",
                    b"- &a [*a, *a, *a]\n" * 3,
                    b"\xff\xfe",
                ]
            ),
        ),
        lambda d: load_yaml(d, source="y.yaml"),
    )


KEY = SigningKey.generate()


def _envelope_seeds() -> list[bytes]:
    statement = json.dumps(statement_of(SEED, {"kind": "environment-note", "note": "n"})).encode()
    return [
        encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, statement, KEY)),
        encode_envelope(sign_envelope(EVENT_PAYLOAD_TYPE, b'{"type":"x"}', KEY)),
    ]


def test_dsse_envelopes() -> None:
    def resolve(key_id: str) -> Any:
        return KEY.public if key_id == KEY.key_id else None

    def both(data: bytes) -> None:
        try:
            read_envelope(data, INTOTO_PAYLOAD_TYPE)
        finally:
            verify_envelope(decode_envelope(data), resolve)

    fuzz("DSSE envelope", inputs(_envelope_seeds(), json_mutations), both)


def test_in_toto_statements() -> None:
    seeds = [
        json.dumps(statement_of(SEED, {"kind": "reproduced", "value": 1, "unit": "ns"})).encode(),
        json.dumps(
            {
                "_type": "https://in-toto.io/Statement/v1",
                "subject": [{"name": SEED, "digest": {"sha256": SEED[7:]}}],
                "predicateType": "https://benchproof.dev/rerun/v2",
                "predicate": {
                    "requestId": SEED,
                    "samples": [1.0, 2.0],
                    "correctness": {"passed": True, "detail": "d"},
                    "environment": {"kind": "cpu", "model": "m", "architecture": "x86_64"},
                    "harness": {"name": "h", "version": "1"},
                },
            }
        ).encode(),
    ]
    kinds = ["attestation.posted.v1", "rerun.completed.v1", "rerun.completed.v2"]

    def every(data: bytes) -> None:
        for kind in kinds:
            with contextlib.suppress(DOCUMENTED):
                statement_event(kind, data, KEY.key_id)

    fuzz("in-toto statement", inputs(seeds, json_mutations), every)


# --- signed notes, checkpoints, receipts, tiles ---------------------------------------------


@pytest.fixture(scope="module")
def served_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, NoteVerifier]:
    """A citation receipt from a real data directory, and its log's verifier key."""
    data = tmp_path_factory.mktemp("hostile-parsers") / "data"
    for args in (
        ("init", "--data", data),
        ("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data),
    ):
        assert run_cli(*args).returncode == 0
    cited = run_cli("cite", SEED, "--format", "receipt", "--data", data)
    assert cited.returncode == 0, cited.stderr
    key = run_cli("log", "key", "--data", data)
    assert key.returncode == 0, key.stderr
    return cited.stdout.encode(), parse_vkey(key.stdout.strip())


def test_signed_notes_and_checkpoints() -> None:
    signer = NoteSigner("example.org/log", KEY)
    verifier = NoteVerifier.for_key("example.org/log", KEY.public)
    body = "example.org/log\n12\n" + "A" * 43 + "=\n"
    seeds = [sign_note(body, [signer]), sign_note("hello\nworld\n", [signer])]

    def note(data: bytes) -> None:
        opened = open_note(data, [verifier])
        parse_checkpoint_body(opened.text)

    def text_of(data: bytes) -> st.SearchStrategy[bytes]:
        return mutated_bytes(data)

    fuzz("signed note / checkpoint", inputs(seeds, text_of), note)
    fuzz(
        "checkpoint body",
        inputs([s.split(b"\n\n")[0] + b"\n" for s in seeds], text_of),
        lambda d: parse_checkpoint_body(d.decode("utf-8", "replace")),
    )


def test_citation_receipts(served_log: tuple[bytes, NoteVerifier]) -> None:
    receipt, verifier = served_log
    verify_receipt(receipt, verifier)  # the seed verifies: the mutations start from a good one

    def lines(data: bytes) -> st.SearchStrategy[bytes]:
        return mutated_bytes(data)

    fuzz("citation receipt (parse)", inputs([receipt], lines), parse_receipt)
    fuzz(
        "citation receipt (verify)",
        inputs([receipt], lines),
        lambda d: verify_receipt(d, verifier),
    )


def test_tile_paths_and_entry_bundles() -> None:
    paths = st.one_of(
        st.text(max_size=40),
        st.from_regex(r"\A/?tile/(entries|[0-9]{1,3})(/x?[0-9]{1,4}){1,4}(\.p/[0-9]{1,4})?\Z"),
        st.sampled_from(["tile/0/x001/234", "tile/entries/000.p/7", "tile/../../etc", "tile/0/"]),
    )
    tried = 0
    crashes: list[str] = []

    @fuzzing(EXAMPLES * 2)
    @given(path=paths)
    def run(path: str) -> None:
        nonlocal tried
        tried += 1
        try:
            parse_path(path)
        except DOCUMENTED:
            pass
        except Exception as exc:  # noqa: BLE001 - the finding
            crashes.append(f"{type(exc).__name__}: {exc} on {path!r}")

    run()
    record_inputs("parser tile path", tried=tried, server_errors=len(crashes))
    assert not crashes, "\n".join(crashes[:10])
    bundle = encode_bundle([b"leaf one", b"", b"x" * 300])
    fuzz(
        "entry bundle",
        inputs([bundle], mutated_bytes),
        lambda d: decode_bundle(d, count=3),
    )


# --- the importers (service/ingest), each source format -----------------------------------


def _catalog_seed() -> bytes:
    path = next(corpus("kernelindex-catalog-2026-08-16").glob("*.jsonl.zst"))
    with path.open("rb") as f:
        reader = zstandard.ZstdDecompressor().stream_reader(f)
        text = io.TextIOWrapper(reader, encoding="utf-8")
        lines = [text.readline() for _ in range(4)]
    return "".join(lines).encode()


def _importer(source: str, relative: str, *, zstd: bool = False, folder: Path | None = None) -> Any:
    """Write the input to ``relative`` inside a fresh folder (a copy of ``folder``, if given)
    and plan its import: the importers read files."""

    def plan(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "in"
            if folder is not None:
                shutil.copytree(folder, root)
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zstandard.ZstdCompressor().compress(data) if zstd else data)
            plan_import(source, [root])

    return plan


def test_importer_manifest_files() -> None:
    seeds = [shared_file("seed-manifest.json").read_bytes()]
    fuzz(
        "importer manifest (.json)",
        inputs(seeds, json_mutations),
        _importer("manifest", "run.json"),
        IMPORT_EXAMPLES,
    )
    fuzz(
        "importer manifest (.yaml)",
        inputs(manifest_seeds()[:3], yaml_mutations),
        _importer("manifest", "run.yaml"),
        IMPORT_EXAMPLES,
    )


def test_importer_kernelindex_catalog() -> None:
    fuzz(
        "importer kernelindex-catalog (.jsonl.zst)",
        inputs([_catalog_seed()], jsonl_mutations),
        _importer("kernelindex-catalog", "catalog.jsonl.zst", zstd=True),
        IMPORT_EXAMPLES,
    )


def test_importer_sol_execbench() -> None:
    fixtures = FIXTURES / "sol"
    for name, relative, seed, structured in (
        ("traces", "traces.jsonl", fixtures / "traces.jsonl", jsonl_mutations),
        ("leaderboard", "leaderboard.json", fixtures / "leaderboard.json", json_mutations),
        (
            "definition",
            "fictional_scale_add/definition.json",
            fixtures / "fictional_scale_add" / "definition.json",
            json_mutations,
        ),
        (
            "workloads",
            "fictional_scale_add/workload.jsonl",
            fixtures / "fictional_scale_add" / "workload.jsonl",
            jsonl_mutations,
        ),
    ):
        fuzz(
            f"importer sol-execbench ({name})",
            inputs([seed.read_bytes()], structured),
            _importer("sol-execbench", relative, folder=fixtures),
            max(4, IMPORT_EXAMPLES // 3),
        )


def test_importer_liger_csv() -> None:
    path = corpus("liger-kernel-bench", "all_benchmark_data.csv")
    seed = b"\n".join(path.read_bytes().splitlines()[:6]) + b"\n"
    fuzz(
        "importer liger (.csv)",
        inputs([seed], csv_mutations),
        _importer("liger", "all_benchmark_data.csv"),
        IMPORT_EXAMPLES,
    )


def test_importer_mlperf_json() -> None:
    rows = msgspec.json.decode(
        corpus("mlperf-inference-v4.1-summary", "summary_results.json").read_bytes()
    )
    seed = json.dumps(rows[:3]).encode()
    fuzz(
        "importer mlperf-inference (.json)",
        inputs([seed], json_mutations),
        _importer("mlperf-inference", "summary_results.json"),
        IMPORT_EXAMPLES,
    )


def test_importer_kernelbench_timings() -> None:
    path = corpus(
        "kernelbench-baseline-timings", "at-423217d", "H100_Modal", "baseline_time_torch.json"
    )
    full = json.loads(path.read_bytes())
    seed = json.dumps({level: dict(list(v.items())[:2]) for level, v in full.items()}).encode()
    fuzz(
        "importer kernelbench-timings (.json)",
        inputs([seed], json_mutations),
        _importer("kernelbench-timings", "at-423217d/H100_Modal/baseline_time_torch.json"),
        IMPORT_EXAMPLES,
    )

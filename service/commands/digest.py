"""``benchproof digest FILE``: the digests and keys of a manifest or bundle, as JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from events import check_manifest, identify, is_bundle, parse_bundle, read_documents
from events.documents import KernelIdentity, ManifestIdentity, ServingIdentity
from service.commands.base import Sub, local_path
from service.errors import NotFound, UsageError

_ENCODER = msgspec.json.Encoder()


def register(sub: Sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "digest",
        parents=[common],
        help="print the digests and keys of a manifest or bundle",
        description=(
            "Print, as JSON, the spec digest of a KernelIndex manifest, or every digest and key "
            "(runDigest, protocolKey, environmentKey, correctnessKey, metricKey, comparisonKey; "
            "serving: protocolKey, topologyKey, metricSetKey, cohortKey) of a bundle "
            "{run, protocol, environment, workload?, operation?}. A file holding several "
            "documents prints a JSON array."
        ),
    )
    p.add_argument(
        "file", type=local_path, metavar="FILE", help="a JSON or YAML manifest or bundle"
    )
    p.set_defaults(handler=run)


def identities(path: Path) -> list[KernelIdentity | ServingIdentity | ManifestIdentity]:
    """The identity of every document in ``path``.

    Raises:
        NotFound: the file does not exist.
        UsageError: the file cannot be read or holds no document.
        InvalidManifest: a document is invalid or contradicts itself.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    source = str(path)
    documents = read_documents(data, source=source)
    if not documents:
        raise UsageError(f"{path}: no manifest in the file")
    out = []
    for i, doc in enumerate(documents):
        where = "$" if len(documents) == 1 else f"$[{i}]"
        if is_bundle(doc):
            out.append(identify(parse_bundle(doc, source=source, path=where), source=source))
        else:
            out.append(
                identify({"": check_manifest(doc, source=source, path=where)}, source=source)
            )
    return out


def run(args: argparse.Namespace) -> int:
    found = identities(args.file)
    body = found[0] if len(found) == 1 else found
    sys.stdout.buffer.write(msgspec.json.format(_ENCODER.encode(body), indent=2) + b"\n")
    return 0

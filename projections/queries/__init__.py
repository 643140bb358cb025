"""Reads of the projections, each as the view stood at a tree size (``as_of``).

Every read is an index lookup on version rows (``valid_from <= p`` and ``valid_to`` NULL or
``> p``), never a replay. ``as_of=None`` means the current state. The modules split the reads
by topic (runs, groups, manifests, moderation, the pages' search, the importers' lookups, the
keyring, the projections' state); every public name is re-exported here, so callers write
``from projections import queries`` and ``queries.run_view(...)``.
"""

from __future__ import annotations

from projections.queries.groups import (
    GroupSummary,
    Ranked,
    StandingsCache,
    all_ranks,
    group,
    leader_history,
    rank_of,
    ranked_members,
)
from projections.queries.keys import (
    KeyringCache,
    attestation_counts,
    keyring,
    matching_keys,
    signed_by,
    signed_counts,
)
from projections.queries.lookups import (
    known_manifests,
    latest_for_rows,
    registered_sources,
    run_exists,
)
from projections.queries.manifests import ingest_position, manifest, run_bundle, run_manifest
from projections.queries.moderation import (
    Attestation,
    AttestationState,
    Report,
    attestation_state,
    attestations,
    find_attestations,
    find_report,
    reports,
)
from projections.queries.neighbours import better_elsewhere
from projections.queries.policies import tolerance_policy
from projections.queries.reruns import rerun_request_ids, rerun_request_run
from projections.queries.runs import (
    aliases_of,
    all_aliases,
    count_runs,
    has_runs,
    iter_run_digests,
    list_runs,
    resolve_run,
    run_digests,
    run_versions,
    run_view,
)
from projections.queries.search import Source, hardware_names, search_runs, sources
from projections.queries.state import current_size, keys_version, stored_format

__all__ = [
    "Attestation",
    "AttestationState",
    "GroupSummary",
    "KeyringCache",
    "Ranked",
    "Report",
    "Source",
    "StandingsCache",
    "aliases_of",
    "all_aliases",
    "all_ranks",
    "attestation_counts",
    "attestation_state",
    "attestations",
    "better_elsewhere",
    "count_runs",
    "current_size",
    "find_attestations",
    "find_report",
    "group",
    "hardware_names",
    "has_runs",
    "ingest_position",
    "iter_run_digests",
    "keyring",
    "keys_version",
    "known_manifests",
    "latest_for_rows",
    "leader_history",
    "list_runs",
    "manifest",
    "matching_keys",
    "rank_of",
    "ranked_members",
    "registered_sources",
    "reports",
    "rerun_request_ids",
    "rerun_request_run",
    "resolve_run",
    "run_bundle",
    "run_digests",
    "run_exists",
    "run_manifest",
    "run_versions",
    "run_view",
    "search_runs",
    "signed_by",
    "signed_counts",
    "sources",
    "stored_format",
    "tolerance_policy",
]

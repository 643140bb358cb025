"""The problem type, title and status of every error the app raises (RFC 9457), looked up
along an error's class hierarchy by ``service.web.problems.to_problem``. Domain packages know
nothing of HTTP; this table gives each error root (and the few subclasses that need another
status) its problem."""

from __future__ import annotations

import msgspec

from events.errors import (
    CanonicalizationError,
    EventError,
    InvalidManifest,
    LogCorrupted,
    LogError,
    ProofError,
)
from events.stores.faults import (
    StorageBusy,
    StorageDamaged,
    StorageFault,
    StorageFull,
    StorageReadOnly,
)
from events.tiles import LeafTooLarge
from keys import KeyringError, UnknownKey, VerificationError
from projections.errors import (
    AmbiguousRun,
    MalformedReference,
    ProjectionError,
    UnknownGroup,
    UnknownRun,
)
from service.app.attest import (
    InvalidStatement,
    RoleMayNotAttest,
    SubjectMismatch,
    UnknownAttestation,
    UnknownAttester,
    UnknownSubject,
    UnsupportedPredicate,
)
from service.app.keyadmin import (
    InvalidEvent,
    KeyNotValid,
    NotCommunity,
    ProtectedKey,
    UnknownKeyId,
    UnknownSigner,
)
from service.app.keys import (
    BadEnvelope,
    BadSignature,
    InvalidRegistration,
    KeyAlreadyRegistered,
    KeyMismatch,
    NameTaken,
    UnsupportedPayloadType,
)
from service.app.moderation import (
    AlreadyHidden,
    AlreadyResolved,
    AlreadyWithdrawn,
    NotTheAttester,
    UnknownReport,
)
from service.app.report import InvalidReport
from service.app.reruns import (
    EnvironmentMismatch,
    InvalidResult,
    NotRerunnable,
    NotRerunner,
    NotTheClaimer,
    RequestClosed,
    RequestLeased,
    UnknownRequest,
)
from service.app.tiles import BadTilePath, TileNotFound
from service.errors import InvalidInput, MirrorReadOnly, NotFound, ServiceError, UsageError
from service.shared.challenges import (
    ChallengeExpired,
    ChallengeForeign,
    ChallengeUnknown,
    ChallengeUsed,
)
from service.shared.limits import RateLimited
from verifier.errors import VerifierError, VerifierUsageError
from verifier.receipts import ReceiptInvalid

__all__ = ["BAD_REQUEST", "BASE", "FALLBACK", "PROBLEMS", "ProblemSpec", "TooLarge", "Unauthorized"]

BASE = "https://benchproof.dev/problems"


class Unauthorized(ServiceError):
    """A write without a valid operator token."""


class TooLarge(ServiceError):
    """A request body over the documented limit."""


class ProblemSpec(msgspec.Struct, frozen=True):
    type_uri: str
    title: str
    status: int


# Bad input of any kind (a malformed parameter, reference or body shape) is this one type.
BAD_REQUEST = ProblemSpec(f"{BASE}/bad-request", "The request is malformed", 400)

PROBLEMS: dict[type[Exception], ProblemSpec] = {
    MalformedReference: BAD_REQUEST,
    UnknownRun: ProblemSpec(f"{BASE}/unknown-run", "No run matches this reference", 404),
    AmbiguousRun: ProblemSpec(f"{BASE}/ambiguous-run", "The reference names several runs", 300),
    UnknownGroup: ProblemSpec(f"{BASE}/unknown-group", "No comparison group has this key", 404),
    ProjectionError: ProblemSpec(f"{BASE}/projection-error", "The view could not be read", 500),
    InvalidManifest: ProblemSpec(f"{BASE}/invalid-manifest", "The manifest is invalid", 422),
    CanonicalizationError: ProblemSpec(f"{BASE}/invalid-manifest", "The manifest is invalid", 422),
    ProofError: ProblemSpec(f"{BASE}/invalid-proof-request", "No such proof", 400),
    LeafTooLarge: ProblemSpec(
        f"{BASE}/entry-too-large", "The entry is too large (over 65,535 bytes)", 413
    ),
    # The storage under the log failed (issue 18): the one place a 5xx is the right answer,
    # with a detail that says what happened (no path) and that nothing was recorded.
    StorageFull: ProblemSpec(f"{BASE}/storage-full", "The server's disk is full", 507),
    StorageReadOnly: ProblemSpec(
        f"{BASE}/storage-read-only", "The log's storage is read-only", 503
    ),
    StorageDamaged: ProblemSpec(f"{BASE}/storage-damaged", "The log's database is damaged", 503),
    StorageBusy: ProblemSpec(f"{BASE}/storage-busy", "The log is busy", 503),
    LogCorrupted: ProblemSpec(f"{BASE}/storage-damaged", "The log's database is damaged", 503),
    StorageFault: ProblemSpec(f"{BASE}/storage-failed", "The log's storage failed", 503),
    LogError: ProblemSpec(f"{BASE}/log-error", "The log refused the request", 400),
    EventError: ProblemSpec(f"{BASE}/invalid-event", "The event is invalid", 422),
    UnknownKey: ProblemSpec(f"{BASE}/unknown-key", "Signing key is not known", 422),
    VerificationError: ProblemSpec(
        f"{BASE}/verification-failed", "The signature does not verify", 422
    ),
    KeyringError: ProblemSpec(f"{BASE}/key-error", "Key error", 422),
    Unauthorized: ProblemSpec(f"{BASE}/unauthorized", "A valid operator token is required", 401),
    TooLarge: ProblemSpec(f"{BASE}/too-large", "The request body is too large", 413),
    # Keys, attestations and reports (issue 13): each refusal its own type.
    BadEnvelope: ProblemSpec(f"{BASE}/bad-envelope", "Not a well-formed DSSE envelope", 400),
    UnsupportedPayloadType: ProblemSpec(
        f"{BASE}/unsupported-payload-type", "The envelope's payload type is not taken here", 400
    ),
    InvalidRegistration: ProblemSpec(
        f"{BASE}/invalid-registration", "Not a community key registration", 400
    ),
    KeyMismatch: ProblemSpec(f"{BASE}/key-mismatch", "The key ids do not agree", 403),
    BadSignature: ProblemSpec(f"{BASE}/bad-signature", "The signature does not verify", 403),
    KeyAlreadyRegistered: ProblemSpec(
        f"{BASE}/key-registered", "The key is registered already", 409
    ),
    NameTaken: ProblemSpec(f"{BASE}/name-taken", "A valid key has this name", 409),
    ChallengeUnknown: ProblemSpec(
        f"{BASE}/challenge-unknown", "This server did not issue the challenge", 400
    ),
    ChallengeForeign: ProblemSpec(
        f"{BASE}/challenge-foreign", "The challenge was issued for another key", 400
    ),
    ChallengeUsed: ProblemSpec(f"{BASE}/challenge-used", "The challenge was used already", 410),
    ChallengeExpired: ProblemSpec(f"{BASE}/challenge-expired", "The challenge expired", 410),
    UnknownAttester: ProblemSpec(
        f"{BASE}/unknown-attester", "The signing key is not registered or not valid", 403
    ),
    RoleMayNotAttest: ProblemSpec(
        f"{BASE}/role-may-not-attest", "This key's role may not attest", 403
    ),
    InvalidStatement: ProblemSpec(
        f"{BASE}/invalid-statement", "Not an attestation statement the schema allows", 400
    ),
    UnsupportedPredicate: ProblemSpec(
        f"{BASE}/unsupported-predicate", "The predicate type is not taken here", 400
    ),
    UnknownSubject: ProblemSpec(
        f"{BASE}/unknown-subject", "The statement's subject is no run of the log", 422
    ),
    SubjectMismatch: ProblemSpec(
        f"{BASE}/subject-mismatch", "The statement is about another run", 422
    ),
    UnknownAttestation: ProblemSpec(
        f"{BASE}/unknown-attestation", "No attestation has this id", 404
    ),
    InvalidReport: ProblemSpec(f"{BASE}/invalid-report", "Not a report this server takes", 400),
    # Moderation and key management: revocation, grants, withdrawal, hiding, resolution.
    InvalidEvent: ProblemSpec(f"{BASE}/invalid-event-payload", "Not the event taken here", 400),
    UnknownKeyId: ProblemSpec(f"{BASE}/unknown-key-id", "No key has this id", 404),
    UnknownSigner: ProblemSpec(
        f"{BASE}/unknown-signer", "The signing key is not registered or not valid", 403
    ),
    KeyNotValid: ProblemSpec(f"{BASE}/key-not-valid", "The key was revoked or rotated", 409),
    ProtectedKey: ProblemSpec(
        f"{BASE}/protected-key", "The index and log keys are not managed here", 403
    ),
    NotCommunity: ProblemSpec(f"{BASE}/not-community", "Not a community key", 409),
    NotTheAttester: ProblemSpec(
        f"{BASE}/not-the-attester", "Only the attester withdraws an attestation", 403
    ),
    AlreadyWithdrawn: ProblemSpec(
        f"{BASE}/already-withdrawn", "The attestation was withdrawn already", 409
    ),
    AlreadyHidden: ProblemSpec(f"{BASE}/already-hidden", "The attestation was hidden already", 409),
    UnknownReport: ProblemSpec(f"{BASE}/unknown-report", "No report has this id", 404),
    AlreadyResolved: ProblemSpec(
        f"{BASE}/already-resolved", "The report was resolved or dismissed already", 409
    ),
    # Reruns (issue 14).
    UnknownRequest: ProblemSpec(
        f"{BASE}/unknown-rerun-request", "No rerun request has this id", 404
    ),
    NotRerunner: ProblemSpec(
        f"{BASE}/not-rerunner", "The key does not hold the rerunner role", 403
    ),
    NotTheClaimer: ProblemSpec(
        f"{BASE}/not-the-claimer", "Only the worker whose claim holds the request answers it", 403
    ),
    RequestClosed: ProblemSpec(f"{BASE}/rerun-answered", "The request was answered already", 409),
    RequestLeased: ProblemSpec(
        f"{BASE}/rerun-leased", "Another worker's lease holds the request", 409
    ),
    EnvironmentMismatch: ProblemSpec(
        f"{BASE}/environment-mismatch", "Not the environment the run needs", 422
    ),
    NotRerunnable: ProblemSpec(
        f"{BASE}/not-rerunnable", "This run cannot be rerun by the index", 422
    ),
    InvalidResult: ProblemSpec(
        f"{BASE}/invalid-rerun-result", "Not a rerun result the v2 predicate allows", 400
    ),
    ReceiptInvalid: ProblemSpec(
        f"{BASE}/receipt-invalid", "The citation receipt does not verify against this log", 422
    ),
    RateLimited: ProblemSpec(f"{BASE}/rate-limited", "Too many requests", 429),
    # Mirrors (issue 16): no local writes, no signatures.
    MirrorReadOnly: ProblemSpec(
        f"{BASE}/mirror-read-only", "This server is a read-only mirror of another log", 403
    ),
    # The C2SP tlog-tiles read API (issue 16).
    BadTilePath: ProblemSpec(f"{BASE}/bad-tile-path", "Not a C2SP tlog-tiles path", 400),
    TileNotFound: ProblemSpec(f"{BASE}/no-such-tile", "No such tile in the log's tree", 404),
    NotFound: ProblemSpec(f"{BASE}/not-found", "Not found", 404),
    InvalidInput: ProblemSpec(f"{BASE}/invalid-input", "The input was refused", 422),
    UsageError: BAD_REQUEST,
    ServiceError: ProblemSpec(f"{BASE}/service-error", "The request failed", 500),
    VerifierUsageError: BAD_REQUEST,
    VerifierError: ProblemSpec(f"{BASE}/service-error", "The request failed", 500),
}
FALLBACK = ProblemSpec("about:blank", "Internal Server Error", 500)

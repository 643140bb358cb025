"""The tolerance policy in force: the latest valid one the index recorded (``p_policies``)."""

from __future__ import annotations

import msgspec

from events.port import Session
from events.statements import sql
from projections.tolerance import DEFAULT_POLICY, POLICY_NAME, TolerancePolicy, policy_from

__all__ = ["tolerance_policy"]

_POLICIES = sql(
    "SELECT version, parameters FROM p_policies WHERE policy = ? ORDER BY valid_from DESC"
)


def tolerance_policy(conn: Session) -> TolerancePolicy:
    """The tolerance policy in force after the rows ``conn`` sees: the latest valid one the
    index recorded, or the built-in default (a log from before policies)."""
    for version, parameters in conn.execute(_POLICIES, (POLICY_NAME,)):
        policy = policy_from(version, msgspec.json.decode(parameters))
        if policy is not None:
            return policy
    return DEFAULT_POLICY

"""Rate limits on PostgreSQL hold under concurrent requests from several processes' worth of
connections: of many hits at once on one subject, exactly the limit is counted."""

from __future__ import annotations

import threading
from pathlib import Path

from service.shared.challenges import Challenges
from service.shared.limits import Limits, RateLimited, RateLimiter


def test_concurrent_hits_count_exactly_the_limit(tmp_path: Path, pg_url: str) -> None:
    # Made once (its table), then hit by twelve limiters at once: as many API processes.
    Challenges(pg_url, tmp_path / "unused.db")  # nothing: the limiter makes its own table
    limiters = [
        RateLimiter(tmp_path / "unused.db", Limits(address_hour=3, address_day=100), store=pg_url)
        for _ in range(12)
    ]
    outcomes: list[str] = []
    start = threading.Barrier(len(limiters))

    def hit(limiter: RateLimiter) -> None:
        start.wait()
        try:
            limiter.hit([("address", "192.0.2.7")])
            outcomes.append("counted")
        except RateLimited:
            outcomes.append("refused")

    threads = [threading.Thread(target=hit, args=(limiter,)) for limiter in limiters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for limiter in limiters:
        limiter.close()
    assert sorted(outcomes) == ["counted"] * 3 + ["refused"] * 9
    assert not (tmp_path / "unused.db").exists()  # the counts are in the store

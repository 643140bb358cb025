"""Rate limits counted in the data directory's database: per key and per address, hourly and
daily, shared by every process on it, nothing counted for a refused write."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.shared.limits import DAY, HOUR, Limits, RateLimited, RateLimiter

T0 = 1_800_000_000 - 1_800_000_000 % DAY  # the start of a UTC day


class Clock:
    def __init__(self) -> None:
        self.now = float(T0)

    def __call__(self) -> float:
        return self.now


def test_hourly_then_daily_limits_with_retry_after(tmp_path: Path) -> None:
    clock = Clock()
    limiter = RateLimiter(tmp_path / "db", Limits(key_hour=2, key_day=3), clock=clock)
    limiter.hit([("key", "k1")])
    clock.now += 10
    limiter.hit([("key", "k1")])
    with pytest.raises(RateLimited, match="2 writes per hour") as raised:
        limiter.hit([("key", "k1")])
    assert raised.value.details["retry_after"] == HOUR - 10
    limiter.hit([("key", "k2")])  # another key has its own count
    clock.now = T0 + HOUR  # a new hour, the same day
    limiter.hit([("key", "k1")])
    with pytest.raises(RateLimited, match="3 writes per day") as raised:
        limiter.hit([("key", "k1")])
    assert raised.value.details["retry_after"] == DAY - HOUR
    clock.now = T0 + DAY
    limiter.hit([("key", "k1")])


def test_a_refused_write_counts_nowhere(tmp_path: Path) -> None:
    clock = Clock()
    limiter = RateLimiter(tmp_path / "db", Limits(key_hour=5, address_hour=1), clock=clock)
    limiter.hit([("key", "k"), ("address", "10.0.0.1")])
    for _ in range(3):
        with pytest.raises(RateLimited, match="client address"):
            limiter.hit([("key", "k"), ("address", "10.0.0.1")])
    for _ in range(4):  # the key's hour still has 4 of 5 left: the refusals were not counted
        limiter.hit([("key", "k")])
    with pytest.raises(RateLimited, match="for this key"):
        limiter.hit([("key", "k")])


def test_processes_on_one_database_share_the_counts(tmp_path: Path) -> None:
    clock = Clock()
    a = RateLimiter(tmp_path / "db", Limits(address_hour=2), clock=clock)
    b = RateLimiter(tmp_path / "db", Limits(address_hour=2), clock=clock)
    a.hit([("address", "x")])
    b.hit([("address", "x")])
    with pytest.raises(RateLimited):
        a.hit([("address", "x")])
    a.close()
    b.close()


def test_zero_means_no_limit(tmp_path: Path) -> None:
    limiter = RateLimiter(tmp_path / "db", Limits(key_hour=0, key_day=0), clock=Clock())
    for _ in range(50):
        limiter.hit([("key", "k")])

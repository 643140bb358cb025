"""Benchmarks (``make bench``): speed is measured here, never by timed tests.

Each section prints its figures and, where an issue names a target, the ratio to a peer
measured in the same run (absolute times on a 2-core machine are noisy; ratios are not).
"""

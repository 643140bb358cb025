"""The reliability suite (issue 18): load, crashes, faults, hostile input, security, backup
and tampering, each against real server processes and real files.

Every test runs in two sizes. Under ``make test`` (the default) each is small, a smoke run of
the same code; ``make reliability`` (``python -m tests.reliability``) sets
``BENCHPROOF_RELIABILITY=full`` and runs them at the issue's sizes (32 clients for 60 s, 20
crash rounds of each kind, hundreds of inputs per parser and thousands per endpoint), then
prints what every test recorded through :mod:`tests.reliability.report` and a one-line
summary."""

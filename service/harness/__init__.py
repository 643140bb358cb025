"""Rerun harnesses and their contract, ``benchproof-harness/v1``.

A rerun worker runs a harness command as a subprocess, writes one JSON object to its stdin (the
run's digest, the request, ``minSamples``, ``timeLimitSeconds`` and the run's KernelIndex
manifests), closes stdin, and reads one JSON object from its stdout: raw samples of the run's
primary statistic in ns, the correctness outcome, the environment and the harness. stderr is
free for progress. Exit 0: the output is the measurement (a failed correctness check is a
result); exit 2: this harness cannot run this bundle (a one-line reason on stderr); any other
code: the harness crashed.

The two objects are published as JSON Schemas in ``schemas/`` (``harness-input-v1`` and
``harness-output-v1``) and mirrored by the structs of ``contract``. ``cpu`` is the shipped
harness (a NumPy row softmax); ``cuda`` the same kernel in PyTorch on a CUDA device (never run
on a GPU here); ``environment`` describes this machine and matches it to a run's; ``run`` runs a
harness within its time limit.
"""

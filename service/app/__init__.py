"""The application layer: one function per use case (docs/rooms.md).

The edges call it and only translate: the CLI (``service.commands``) turns arguments into calls
and answers into text or JSON lines, the HTTP API and pages (``service.web``) turn requests into
calls and answers into responses. A use case takes plain values (the ledger, a log reader and the
projections' session, references, tree sizes) and returns msgspec structs, or raises the errors
of ``service.errors``, ``projections.errors`` or ``events.errors``, which each edge maps (exit
codes, problem details). Nothing here knows argparse or litestar.

- ``ingest``: import a source's files, or one uploaded file, into the signed log;
- ``runs``: a run by any reference and its dossier, pages and listings of runs, comparisons;
- ``groups``: a comparison group with its ranked runs, and leader history;
- ``browse``: the home page's search with its sources and hardware; runs side by side with
  their sources' names;
- ``log``: the signed checkpoint answering ``asOf``, entries, inclusion and consistency proofs;
- ``verify``: verify a whole log, read-only;
- ``replay``: rebuild every projection from the log and compare;
- ``keys``: challenges and self-registration of community keys (proof of possession);
- ``attest``: post signed attestations (in-toto statements in DSSE envelopes), list and show them;
- ``report``: file reports about a run (anonymous);
- ``reruns``: request, claim and complete index-controlled reruns;
- ``cite``: cite a run (formats, the signed receipt), check a plain citation, verify online;
- ``history``: every entry that touched a run;
- ``tiles``: the C2SP tlog-tiles resources of the log;
- ``answers``: recompute a saved signed answer from a local log and compare;
- ``audit``: fetch a remote log through its tiles, verify it, replay it, compare its views;
- ``mirror``: export a log segment, import one (or a server's log) as a mirror.
"""

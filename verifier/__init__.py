"""What a third party needs to check Benchproof's claims, and nothing else: the whole log's
verification over any ``events.port.LogReader`` (``verifier.log``), citation receipts and their
online check (``verifier.receipts``), the signed-answer format (``verifier.answers``) and the
reader of a log through its C2SP tlog-tiles (``verifier.tiles``).

It imports only ``events`` and ``keys`` (and third-party libraries): an auditor can vendor these
three packages and check a log, a receipt or an answer without the service.
"""

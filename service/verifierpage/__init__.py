"""The offline verifier page (``benchproof verifier``, ``GET /verify``): ``page``."""

"""The HTTP service: a litestar app (``create_app``), its JSON API under ``/v1``, the HTML pages,
problem details, operator tokens and request logging."""

"""The TLS context batchpay's HTTP clients verify servers with: one per trust store and process.

httpx builds a context for every client it makes, reading the whole CA bundle again each
time (about 30 ms of CPU). A command makes several clients (the payout service's, the
sandbox's webhook sender), and a console or a test process makes many. A context is safe
to share between clients and threads, so one per trust store serves them all. The trust
store is where httpx reads it from: the system's, or SSL_CERT_FILE / SSL_CERT_DIR when set,
read at each call so that a changed variable is followed.
"""

from __future__ import annotations

import os
import ssl
import threading

import httpx

_contexts: dict[tuple[str | None, str | None], ssl.SSLContext] = {}
_lock = threading.Lock()


def verifying_context() -> ssl.SSLContext:
    """httpx's default verifying context (verify=True), built once per trust store."""
    store = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _lock:
        if store not in _contexts:
            _contexts[store] = httpx.create_ssl_context()
        return _contexts[store]

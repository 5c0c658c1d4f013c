"""One TLS context per HTTP library per process, shared by every client the engine makes with that library.

Why: an httpx client builds its TLS context when it is made, whether or not it will ever speak TLS, and
building one reads the certificate store: about 35 ms of CPU (httpx and httpx2 alike, measured), more than
the whole rest of a bot turn's engine work many times over. A started bot's readiness check made a client per
try, an HTTP bot, a voice bot and each SDK client one each. A context is made to be shared (clients of one
library that trust the same certificates may use one), so each library's default, built by its own
`create_ssl_context` (the certificates it trusts, `SSL_CERT_FILE` and `SSL_CERT_DIR` as it reads them, read
when the first client is made), is built once and given to every client as `verify=`.
"""

from __future__ import annotations

__all__ = ["shared_ssl_context"]

import importlib
import ssl
import threading

_CONTEXTS: dict[str, ssl.SSLContext] = {}
_LOCK = threading.Lock()


def shared_ssl_context(library: str = "httpx") -> ssl.SSLContext:
    """`library.create_ssl_context()` (httpx, or httpx2 under the SDKs), made once in this process."""
    context = _CONTEXTS.get(library)
    if context is None:
        with _LOCK:
            context = _CONTEXTS.get(library)
            if context is None:
                made: ssl.SSLContext = importlib.import_module(library).create_ssl_context()
                context = _CONTEXTS[library] = made
    return context

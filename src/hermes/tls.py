"""TLS contexts shared by every HTTP client Hermes makes.

Loading a CA bundle is the costliest step of making an HTTP client: a model client, a
platform's client, a web fetch or a cron delivery each paid it again. A verified
`ssl.SSLContext` is safe to share across clients, threads and event loops, so each HTTP
library's default context is built once per process and handed to its clients. Each is that
library's own default (httpx: certifi, or SSL_CERT_FILE / SSL_CERT_DIR; the openai SDK's
httpx2: the system's store, or the same variables), so what a client trusts is unchanged;
those variables are read when the first client is made.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def httpx_context() -> ssl.SSLContext:
    """What `httpx.AsyncClient()` verifies with by default, built once."""
    import httpx

    return httpx.create_ssl_context()


@functools.cache
def openai_context() -> ssl.SSLContext:
    """What the openai SDK's HTTP clients verify with by default, built once."""
    import httpx2

    return httpx2.create_ssl_context()

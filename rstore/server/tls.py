"""TLS for ``rstore serve`` (``--tls-port``), with Python's :mod:`ssl`: the server's
certificate and key, and the CA whose client certificates are required (``tls-auth-clients
yes``, Valkey's default), accepted (``optional``), or not asked for (``no``: then no CA is
needed)."""

from __future__ import annotations

import ssl

from .config import ServerConfig

__all__ = ["tls_context"]


def tls_context(config: ServerConfig) -> ssl.SSLContext:
    """The server side TLS context of ``config``; :class:`ValueError` naming what is missing,
    :class:`ssl.SSLError` / :class:`OSError` for files that cannot be used."""
    if not config.tls_cert_file or not config.tls_key_file:
        raise ValueError("--tls-port needs --tls-cert-file and --tls-key-file")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
    mode = config.tls_auth_clients.lower()
    if mode == "no":
        context.verify_mode = ssl.CERT_NONE
        return context
    if not config.tls_ca_cert_file:
        raise ValueError(
            "client certificates (tls-auth-clients yes or optional) need --tls-ca-cert-file; "
            "give one, or --tls-auth-clients no"
        )
    context.load_verify_locations(config.tls_ca_cert_file)
    context.verify_mode = ssl.CERT_REQUIRED if mode == "yes" else ssl.CERT_OPTIONAL
    return context

"""``rstore serve --tls-port``: TLS with a server certificate, client certificates required
by default (signed by the given CA), optional, or not asked for; a client without a valid
certificate is refused at the handshake."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
import redis
from served import ServedStore
from valkey_server import free_port

import rstore

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, both signed by it."""
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
             "-keyout", str(d / "ca.key"), "-out", str(d / "ca.crt"))  # fmt: skip
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                 "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"))  # fmt: skip
        ext = d / f"{name}.ext"
        ext.write_text("subjectAltName=IP:127.0.0.1\n")
        _openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.crt"),
                 "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "2",
                 "-extfile", str(ext), "-out", str(d / f"{name}.crt"))  # fmt: skip
    return d


def _client(port: int, pki: Path, with_cert: bool) -> redis.Redis:
    extra = (
        {"ssl_certfile": str(pki / "client.crt"), "ssl_keyfile": str(pki / "client.key")}
        if with_cert
        else {}
    )
    return redis.Redis(
        host="127.0.0.1",
        port=port,
        ssl=True,
        ssl_ca_certs=str(pki / "ca.crt"),
        socket_timeout=10,
        **extra,
    )


@pytest.mark.parametrize("auth_clients", ["yes", "optional", "no"])
def test_tls(tmp_path: Path, pki: Path, auth_clients: str) -> None:
    tls_port = free_port()
    with (
        rstore.Store(tmp_path / "s") as store,
        ServedStore(
            store,
            tls_port=tls_port,
            tls_cert_file=str(pki / "server.crt"),
            tls_key_file=str(pki / "server.key"),
            tls_ca_cert_file=str(pki / "ca.crt"),
            tls_auth_clients=auth_clients,
        ) as served,
    ):
        with_cert = _client(tls_port, pki, True)
        assert with_cert.xadd("s", {"f": "v"}, id="1-1") == b"1-1"
        without = _client(tls_port, pki, False)
        if auth_clients == "yes":
            with pytest.raises((redis.ConnectionError, ssl.SSLError)):
                without.xlen("s")
        else:
            assert without.xlen("s") == 1
        assert redis.Redis(port=served.port).xlen("s") == 1  # the plain port too


def test_tls_settings_that_cannot_work_are_refused(tmp_path: Path, pki: Path) -> None:
    from rstore.server import ServerConfig
    from rstore.server.tls import tls_context

    with pytest.raises(ValueError, match="needs --tls-cert-file"):
        tls_context(ServerConfig(tls_port=1))
    with pytest.raises(ValueError, match="need --tls-ca-cert-file"):
        tls_context(ServerConfig(tls_port=1, tls_cert_file=str(pki / "server.crt"),
                                 tls_key_file=str(pki / "server.key")))  # fmt: skip

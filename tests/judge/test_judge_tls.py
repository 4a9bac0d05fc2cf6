"""The judge reaches an https:// endpoint with the CA bundle the openai SDK would use (SSL_CERT_FILE when set), and
refuses a certificate it cannot verify."""
from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest

from judge import Judge, JudgeConfig
from kinds.dialogue.prompts import DialogueContext, prompt
from tests.judge_server import JudgeServer

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command is needed for a test "
                                                                        "certificate")


@pytest.fixture
def tls_judge(tmp_path):
    """A local judge server behind TLS with a self-signed certificate for 127.0.0.1; (base URL, certificate path)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with JudgeServer() as server:
        server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
        yield f"https://127.0.0.1:{server.port}/v1", cert, server


def ask(url: str) -> object:
    with Judge(JudgeConfig(base_url=url, api_key="sk-tls", max_retries=0)) as judge:
        return judge.judge(prompt("fine", DialogueContext("p", "c", [], "hi", "hello [[score=70]]"), "en"))


def test_a_certificate_the_bundle_vouches_for_is_accepted(tls_judge, monkeypatch):
    url, cert, server = tls_judge
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    verdict = ask(url)
    assert verdict.status == "ok" and verdict.total == 70 and server.requests == 1


def test_an_unknown_certificate_is_refused_before_anything_is_sent(tls_judge, monkeypatch):
    url, _cert, server = tls_judge
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    verdict = ask(url)
    assert verdict.status == "failed" and "CERTIFICATE_VERIFY_FAILED" in verdict.error
    assert server.requests == 0

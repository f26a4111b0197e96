"""batchpay's HTTP clients share one verifying TLS context per trust store."""

from __future__ import annotations

import ssl

import certifi
import pytest

from batchpay.tls import verifying_context


def test_one_context_per_trust_store_and_it_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    system = verifying_context()
    assert verifying_context() is system  # built once, not per client
    assert system.verify_mode == ssl.CERT_REQUIRED and system.check_hostname

    # a trust store named in the environment is followed, as httpx follows it
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    named = verifying_context()
    assert named is not system and named is verifying_context()
    assert named.verify_mode == ssl.CERT_REQUIRED and named.check_hostname

"""The public CAs outbound HTTPS calls trust are loaded once per process, and verify fully."""

from __future__ import annotations

import ssl

from synthorg.tls.context import MINIMUM_VERSION, public_trust


def test_public_trust_is_one_verifying_context() -> None:
    context = public_trust()
    assert context is public_trust()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.minimum_version == MINIMUM_VERSION
    assert context.cert_store_stats()["x509_ca"] > 0  # the bundle is loaded

"""Signed pushes between federation members: HMAC-SHA256 of the timestamp and the body.

The key is the link secret of the catalog peer (the same secret both ways), so only the two
ends of a link can make or check a signature. Lowercase hex, compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac

# The header names are the receiver operation's parameters in the spec.
from synthorg.generated.constants import A2A_DELIVERY_ID_HEADER as DELIVERY_ID_HEADER
from synthorg.generated.constants import A2A_NOTIFICATION_TOKEN_HEADER as TOKEN_HEADER
from synthorg.generated.constants import A2A_SIGNATURE_HEADER as SIGNATURE_HEADER
from synthorg.generated.constants import A2A_TIMESTAMP_HEADER as TIMESTAMP_HEADER

__all__ = [
    "DELIVERY_ID_HEADER", "SIGNATURE_HEADER", "TIMESTAMP_HEADER", "TOKEN_HEADER", "signature",
]


def signature(secret: str, timestamp: str, body: bytes) -> str:
    return hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).hexdigest()


def signature_matches(secret: str, timestamp: str, body: bytes, presented: str) -> bool:
    # bytes, so a header with non-ASCII characters is a mismatch, not an error
    expected = signature(secret, timestamp, body).encode()
    return hmac.compare_digest(expected, presented.encode("utf-8", "replace"))

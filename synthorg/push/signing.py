"""Signed pushes between federation members: HMAC-SHA256 of the timestamp and the body.

The key is the link secret of the catalog peer (the same secret both ways), so only the two
ends of a link can make or check a signature. Lowercase hex, compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac

TOKEN_HEADER = "X-A2A-Notification-Token"
DELIVERY_ID_HEADER = "X-A2A-Delivery-Id"
TIMESTAMP_HEADER = "X-A2A-Timestamp"
SIGNATURE_HEADER = "X-A2A-Signature"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    return hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).hexdigest()


def signature_matches(secret: str, timestamp: str, body: bytes, presented: str) -> bool:
    # bytes, so a header with non-ASCII characters is a mismatch, not an error
    expected = signature(secret, timestamp, body).encode()
    return hmac.compare_digest(expected, presented.encode("utf-8", "replace"))

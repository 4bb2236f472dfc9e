"""Signed pushes between federation members: HMAC-SHA256 over everything the receiver acts on.

The key is the link secret of the catalog peer (the same secret both ways), so only the two
ends of a link can make or check a signature. The signed string is

    X-A2A-Timestamp LF X-A2A-Delivery-Id LF receiver path LF body

where the receiver path is the operation's path with the sender's name in it
(`/api/v1/webhooks/{sender}/a2a_push`, whatever prefix a proxy adds in front). So a captured
push cannot be sent again under a new delivery id, nor reflected back to its sender (the link
secret is shared, but the path names the direction), nor given another body or time.
Lowercase hex, compared in constant time.

A2A's own form of push authentication is a credential the receiver handed out when it asked
for the pushes (`PushNotificationConfig.authentication`, sent back as `Authorization: <scheme>
<credentials>`; 0.3's `token`, as X-A2A-Notification-Token). The one this node hands out for a
delegation is `push_credential`: derived, not stored, from the link secret, the receiver path
and the peer's task id, so it is good for that one task from that one peer and nothing else.
"""

from __future__ import annotations

import hashlib
import hmac

# The header names are the receiver operation's parameters in the spec.
from synthorg.generated.constants import A2A_DELIVERY_ID_HEADER as DELIVERY_ID_HEADER
from synthorg.generated.constants import A2A_NOTIFICATION_TOKEN_HEADER as TOKEN_HEADER
from synthorg.generated.constants import A2A_SIGNATURE_HEADER as SIGNATURE_HEADER
from synthorg.generated.constants import A2A_TIMESTAMP_HEADER as TIMESTAMP_HEADER
from synthorg.generated.constants import PUSH_RECEIVE

__all__ = [
    "DELIVERY_ID_HEADER", "SIGNATURE_HEADER", "TIMESTAMP_HEADER", "TOKEN_HEADER",
    "credential_matches", "push_credential", "receiver_path", "signature",
    "signature_matches", "signed_string",
]

_CREDENTIAL_LABEL = "synthorg push credential"  # keeps it apart from any signature


def receiver_path(sender: str) -> str:
    """The receiver operation's path for pushes from `sender` (its name in the receiver's
    catalog, which is the sender's own node name)."""
    return PUSH_RECEIVE.path.format(peer=sender)


def signed_string(timestamp: str, delivery_id: str, sender: str, body: bytes) -> bytes:
    # none of the first three can hold a line feed: a timestamp is digits, a delivery id
    # visible ASCII (the receiver refuses anything else), a peer name matches its pattern
    head = "\n".join((timestamp, delivery_id, receiver_path(sender), ""))
    return head.encode("utf-8", "replace") + body


def signature(secret: str, timestamp: str, delivery_id: str, sender: str, body: bytes) -> str:
    message = signed_string(timestamp, delivery_id, sender, body)
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_matches(
    secret: str, timestamp: str, delivery_id: str, sender: str, body: bytes, presented: str
) -> bool:
    # bytes, so a header with non-ASCII characters is a mismatch, not an error
    expected = signature(secret, timestamp, delivery_id, sender, body).encode()
    return hmac.compare_digest(expected, presented.encode("utf-8", "replace"))


def push_credential(secret: str, sender: str, task_id: str) -> str:
    """The credential this node registers for pushes from `sender` (the name its receiver
    path carries) about `sender`'s task `task_id`: lowercase hex HMAC-SHA256 keyed with the
    link secret. Never logged; whoever holds it can push about that task only."""
    message = "\n".join((_CREDENTIAL_LABEL, receiver_path(sender), task_id))
    return hmac.new(secret.encode(), message.encode("utf-8", "replace"),
                    hashlib.sha256).hexdigest()


def credential_matches(expected: str, presented: str) -> bool:
    # bytes, so a header with non-ASCII characters is a mismatch, not an error
    return hmac.compare_digest(expected.encode(), presented.encode("utf-8", "replace"))

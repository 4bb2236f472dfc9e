"""The admin token never passes a peer gate.

`AdminTokenGuardedGate` is the node's peer gate (`synthorg.gateway.auth.PeerGate`) with one more
refusal: a request the three gates admit is refused (401, -32003, like any bad credential)
when the credential it presents, as `X-API-Key` or `Authorization: Bearer`, is the admin
token. The admin API refuses to store a peer secret equal to the token, and so does the CLI;
this closes the remaining ways (a token set through the environment after the record was
written, or a node in `dev_allow_without_catalog` mode, which checks no credential at all).
"""

from __future__ import annotations

from collections.abc import Mapping

from synthorg.admin.token import AdminToken, bearer_credential
from synthorg.gateway.auth import (
    API_KEY_HEADER,
    AUTHORIZATION_HEADER,
    Admitted,
    CredentialCatalog,
    GateResult,
    PeerGate,
    Refused,
)
from synthorg.gateway.errors import UNAUTHENTICATED

# The peer gate's message for every credential failure, so this one cannot be told apart.
_BAD_CREDENTIAL_MSG = "Invalid or missing credentials"


class AdminTokenGuardedGate(PeerGate):
    def __init__(
        self,
        allowed_peers: frozenset[str],
        catalog: CredentialCatalog | None,
        admin_token: AdminToken,
    ) -> None:
        super().__init__(allowed_peers, catalog)
        self.admin_token = admin_token

    def check(self, headers: Mapping[str, str]) -> GateResult:
        result = super().check(headers)
        if not isinstance(result, Admitted):
            return result
        try:
            presents_admin_token = self._presents_admin_token(headers)
        except Exception:
            presents_admin_token = True  # fail closed
        if presents_admin_token:
            return Refused(401, UNAUTHENTICATED, "admin_token_presented", _BAD_CREDENTIAL_MSG,
                           result.peer)
        return result

    def _presents_admin_token(self, headers: Mapping[str, str]) -> bool:
        lowered = {key.lower(): value for key, value in headers.items()}
        presented: list[bytes] = []
        api_key = lowered.get(API_KEY_HEADER)
        if api_key is not None:
            presented.append(api_key.strip().encode("utf-8", "surrogateescape"))
        authorization = lowered.get(AUTHORIZATION_HEADER)
        if authorization is not None:
            bearer = bearer_credential(authorization.encode("utf-8", "surrogateescape"))
            if bearer is not None:
                presented.append(bearer)
        # Check every candidate: no early exit, so timing does not say which one matched.
        matches = [self.admin_token.matches(value) for value in presented]
        return any(matches)

"""This node's own cards: rendered once per (base URL, agent), then served from memory.

The company YAML cannot change while the process runs, so a rendered card (canonical JSON
bytes and the strong ETag hashed from them) stays valid for the life of the node.

The card `url` is `a2a.public_url` when it is configured. Without it the URL is built from
the address of the socket that accepted the connection (ASGI `scope["server"]`), never from
the `Host` header: the Host header is whatever the caller typed, and a card cached under it
would hand the next caller an attacker's URL. Socket addresses are the node's own, so the
cache holds at most one copy per local address; a small bound guards even that.

Each card has three documents: the combined one (A2A 0.3 members beside 1.0's
`supportedInterfaces`, `securityRequirements` and each security scheme's 1.0 member, which
both SDKs parse), served by default; the 1.0-only one (`V1AgentCard`), served to a caller
that asks with `A2A-Version: 1.0` (a strict 1.0 reader refuses the 0.3 members); and the
0.3-only one, served for `A2A-Version: 0.3`.

With a key set, every document is signed (`synthorg/cards/signing.py`) by its newest key, the
signature's `jku` naming the JWKS under the card's base URL; the ETag hashes the signed bytes,
so it changes when the signature does.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from synthorg.cards.keys import CardKeySet
from synthorg.cards.projection import agent_card, card_version, company_card
from synthorg.cards.signing import JWKS_PATH, signed
from synthorg.cards.v03 import card_v03_json
from synthorg.cards.v1 import card_v1_json
from synthorg.config.company import NodeConfig
from synthorg.generated.constants import A2A_VERSION_0_3, A2A_VERSION_1_0
from synthorg.generated.models import AgentCard, V1AgentCard
from synthorg.http.caching import DEFAULT_MAX_AGE

CACHE_CONTROL = f"public, max-age={DEFAULT_MAX_AGE}"
FALLBACK_BASE_URL = "http://localhost"
MAX_BASE_URLS = 8


class LocalRequest(Protocol):
    @property
    def local_base_url(self) -> str: ...


@dataclass(frozen=True, slots=True)
class RenderedCard:
    body: bytes
    etag: str


def document_of(card: AgentCard, version: str | None = None) -> dict[str, Any]:
    """The card as JSON: its default document, or the one of an A2A version (`1.0`: 1.0's
    members only; `0.3`: 0.3's)."""
    document = card.model_dump(mode="json", by_alias=True, exclude_none=True)
    if version == A2A_VERSION_1_0:
        document = V1AgentCard.model_validate(card_v1_json(document)).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    elif version == A2A_VERSION_0_3:
        document = AgentCard.model_validate(card_v03_json(document)).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    return document


def render(card: AgentCard, version: str | None = None, keys: CardKeySet | None = None,
           base_url: str = FALLBACK_BASE_URL) -> RenderedCard:
    """The card's canonical bytes (its document for `version`), signed when given keys."""
    document = document_of(card, version)
    if keys is not None:
        document = signed(document, keys.signer, base_url + JWKS_PATH)
    return canonical_document(document)


def canonical_document(document: Mapping[str, Any]) -> RenderedCard:
    # Canonical bytes: the same document always hashes to the same ETag, on every node.
    body = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    return RenderedCard(body, f'"{hashlib.sha256(body).hexdigest()[:32]}"')



def socket_base_url(scope: Mapping[str, Any]) -> str:
    """`scheme://host:port` of the local socket that took the request (not the Host header)."""
    scheme = scope.get("scheme")
    scheme = scheme if scheme in ("http", "https") else "http"
    server = scope.get("server")
    if not server or server[1] is None:  # e.g. a Unix socket: no address a peer could use
        return FALLBACK_BASE_URL
    host, port = str(server[0]), int(server[1])
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        return FALLBACK_BASE_URL
    default_port = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" + ("" if port == default_port else f":{port}")


class CardPublisher:
    """This node's cards (`handlers.context.CardsContext`)."""

    cache_control = CACHE_CONTROL

    def __init__(self, config: NodeConfig, version: str | None = None,
                 keys: CardKeySet | None = None) -> None:
        self.enabled = config.a2a.enabled
        self.keys = keys
        self._config = config
        self._version = version or card_version()
        self._agents = {agent.id: agent for agent in config.agents}
        public = config.a2a.public_url
        self._public_url = public.rstrip("/") if public else None
        self._rendered: dict[tuple[str, str | None, str | None], RenderedCard] = {}
        self._bases: set[str] = set()
        self._jwks: RenderedCard | None = None

    def base_url(self, scope: Mapping[str, Any]) -> str:
        return self._public_url or socket_base_url(scope)

    def company(self, request: LocalRequest, version: str | None = None) -> RenderedCard:
        return self.company_at(self._public_url or request.local_base_url, version)

    def agent(
        self, agent_id: str, request: LocalRequest, version: str | None = None
    ) -> RenderedCard | None:
        """None when no agent has this id."""
        return self.agent_at(agent_id, self._public_url or request.local_base_url, version)

    def extended(self, agent_id: str | None, scope: Mapping[str, Any]) -> AgentCard:
        """The extended card (`gateway.context.ExtendedCards`): built per call, for admitted
        peers only, so it is never cached where an unauthenticated reader could reach it."""
        base_url = self.base_url(scope)
        if agent_id is None or agent_id not in self._agents:
            card = company_card(self._config, base_url, self._version, extended=True)
        else:
            card = agent_card(
                self._config, self._agents[agent_id], base_url, self._version, extended=True
            )
        if self.keys is None:
            return card
        return AgentCard.model_validate(self._signed(document_of(card), base_url))

    def extended_v1(self, agent_id: str | None, scope: Mapping[str, Any]) -> V1AgentCard:
        """The extended card's 1.0-only document, signed as such."""
        card = self.extended(agent_id, scope)
        document = document_of(card.model_copy(update={"signatures": None}), A2A_VERSION_1_0)
        return V1AgentCard.model_validate(self._signed(document, self.base_url(scope)))

    def jwks(self) -> RenderedCard | None:
        """The public keys as a JWKS document; None when cards are not signed."""
        if self.keys is None:
            return None
        if self._jwks is None:
            self._jwks = canonical_document(self.keys.jwks())
        return self._jwks

    def _signed(self, document: dict[str, Any], base_url: str) -> dict[str, Any]:
        if self.keys is None:
            return document
        return signed(document, self.keys.signer, base_url + JWKS_PATH)

    def company_at(self, base_url: str, version: str | None = None) -> RenderedCard:
        return self._cached(base_url, None, version)

    def agent_at(
        self, agent_id: str, base_url: str, version: str | None = None
    ) -> RenderedCard | None:
        """None when no agent has this id."""
        if agent_id not in self._agents:
            return None
        return self._cached(base_url, agent_id, version)

    def _cached(self, base_url: str, agent_id: str | None, version: str | None) -> RenderedCard:
        key = (base_url, agent_id, version)
        found = self._rendered.get(key)
        if found is not None:
            return found
        if agent_id is None:
            card = company_card(self._config, base_url, self._version)
        else:
            card = agent_card(self._config, self._agents[agent_id], base_url, self._version)
        rendered = render(card, version, self.keys, base_url)
        if base_url in self._bases or len(self._bases) < MAX_BASE_URLS:
            self._bases.add(base_url)
            self._rendered[key] = rendered
        return rendered

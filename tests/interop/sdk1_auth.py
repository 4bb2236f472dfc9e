"""Drives the official `a2a-sdk` 1.x client with its own `AuthInterceptor` and one stored
credential (its own venv, `make sdk1-venv`), for `test_sdk1_auth.py`:

    python sdk1_auth.py URL SCHEME SECRET   send one message to agent echo with SECRET stored
                                            for the card's SCHEME (ApiKey or Bearer); prints
                                            the final task state as JSON
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict


async def run(url: str, scheme: str, secret: str) -> dict[str, str]:
    from a2a.client import ClientCallContext, ClientConfig, ClientFactory
    from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
    from a2a.types.a2a_pb2 import Message, SendMessageRequest

    store = InMemoryContextCredentialStore()
    await store.set_credentials("operator", scheme, secret)
    async with httpx.AsyncClient(timeout=30) as http:
        factory = ClientFactory(ClientConfig(streaming=False, httpx_client=http))
        client = await factory.create_from_url(url, interceptors=[AuthInterceptor(store)])
        message = ParseDict({"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                             "parts": [{"text": "hello"}], "metadata": {"agentId": "echo"}},
                            Message())
        context = ClientCallContext(state={"sessionId": "operator"})
        answers = [MessageToDict(event) async for event in client.send_message(
            SendMessageRequest(message=message), context=context)]
    return {"state": answers[-1]["task"]["status"]["state"]}


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    print(json.dumps(asyncio.run(run(*sys.argv[1:]))))

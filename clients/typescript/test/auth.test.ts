// Credentials placed as a card's security schemes say, in 0.3's and 1.0's card shapes.

import assert from "node:assert/strict";
import { test } from "node:test";
import { A2AAuthError, authHeaders } from "../src/index.js";

const V03 = {
  securitySchemes: {
    PeerName: { type: "apiKey", in: "header", name: "X-A2A-Peer-Name" },
    ApiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
    Bearer: { type: "http", scheme: "bearer" },
  },
  security: [{ PeerName: [], ApiKey: [] }, { PeerName: [], Bearer: [] }],
};

const V1 = {
  securitySchemes: {
    PeerName: { apiKeySecurityScheme: { location: "header", name: "X-A2A-Peer-Name" } },
    ApiKey: { apiKeySecurityScheme: { location: "header", name: "X-API-Key" } },
    Bearer: { httpAuthSecurityScheme: { scheme: "Bearer" } },
  },
  securityRequirements: [{ schemes: { PeerName: { list: [] }, ApiKey: { list: [] } } }, { schemes: { PeerName: { list: [] }, Bearer: { list: [] } } }],
};

for (const [shape, card] of [["0.3", V03], ["1.0", V1]] as const) {
  test(`the first requirement the credentials cover is used, ${shape} card`, () => {
    assert.deepEqual(authHeaders(card, { PeerName: "a", ApiKey: "k" }), { "X-A2A-Peer-Name": "a", "X-API-Key": "k" });
    assert.deepEqual(authHeaders(card, { PeerName: "a", Bearer: "t" }), { "X-A2A-Peer-Name": "a", Authorization: "Bearer t" });
  });

  test(`credentials that cover no requirement are refused, ${shape} card`, () => {
    assert.throws(() => authHeaders(card, { PeerName: "a" }), A2AAuthError);
    assert.throws(() => authHeaders(card, { ApiKey: "k", Bearer: "t" }), A2AAuthError);
  });
}

test("a card without requirements needs nothing; a scheme the client cannot send is refused", () => {
  assert.deepEqual(authHeaders({}, {}), {});
  const query = { securitySchemes: { K: { type: "apiKey", in: "query", name: "key" } }, security: [{ K: [] }] };
  assert.throws(() => authHeaders(query, { K: "k" }), /cannot send/);
});

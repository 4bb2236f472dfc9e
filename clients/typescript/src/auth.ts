// Authentication from the card: the card names its security schemes and which of them must be
// presented together (its requirements, alternatives in order). The caller holds a credential
// per scheme name; the first requirement whose every scheme has one is used, and each scheme
// says where its credential goes. Both card shapes are read: 0.3's `securitySchemes`
// ({type, in, name}) with `security`, and 1.0's ({apiKeySecurityScheme | httpAuthSecurityScheme})
// with `securityRequirements`.

import { A2AAuthError } from "./errors.js";

/** A credential for each security scheme of the card, by the scheme's name in the card. */
export type Credentials = Readonly<Record<string, string>>;

/** Where a credential goes, as one scheme says. */
type Placement =
  | { kind: "header"; name: string }
  | { kind: "bearer" }
  | { kind: "unsupported"; what: string };

interface CardSecurity {
  securitySchemes?: Record<string, unknown>;
  security?: Record<string, unknown>[];
  securityRequirements?: { schemes?: Record<string, unknown> }[];
}

function placement(scheme: unknown): Placement {
  if (typeof scheme !== "object" || scheme === null) return { kind: "unsupported", what: "not an object" };
  const s = scheme as Record<string, unknown>;
  const apiKey = (s.apiKeySecurityScheme ?? (s.type === "apiKey" ? s : undefined)) as
    | { in?: unknown; location?: unknown; name?: unknown }
    | undefined;
  if (apiKey !== undefined) {
    const where = apiKey.location ?? apiKey.in;
    if (where === "header" && typeof apiKey.name === "string") return { kind: "header", name: apiKey.name };
    return { kind: "unsupported", what: `an API key in ${String(where)}` };
  }
  const http = (s.httpAuthSecurityScheme ?? (s.type === "http" ? s : undefined)) as { scheme?: unknown } | undefined;
  if (http !== undefined) {
    if (typeof http.scheme === "string" && http.scheme.toLowerCase() === "bearer") return { kind: "bearer" };
    return { kind: "unsupported", what: `HTTP ${String(http.scheme)} authentication` };
  }
  return { kind: "unsupported", what: `a ${String(s.type ?? Object.keys(s)[0])} scheme` };
}

/** The requirements of a card, each the list of scheme names it needs together. */
function requirements(card: CardSecurity): string[][] {
  if (Array.isArray(card.securityRequirements)) {
    return card.securityRequirements.map((r) => Object.keys(r.schemes ?? {}));
  }
  if (Array.isArray(card.security)) return card.security.map((r) => Object.keys(r));
  return [];
}

/**
 * The request headers that satisfy the card's first requirement the credentials cover. A card
 * without requirements needs none. Throws A2AAuthError when no requirement can be met.
 */
export function authHeaders(card: CardSecurity, credentials: Credentials): Record<string, string> {
  const wanted = requirements(card);
  if (wanted.length === 0) return {};
  const schemes = card.securitySchemes ?? {};
  const problems: string[] = [];
  for (const names of wanted) {
    const headers: Record<string, string> = {};
    const missing: string[] = [];
    for (const name of names) {
      const credential = credentials[name];
      const where = placement(schemes[name]);
      if (credential === undefined) missing.push(name);
      else if (where.kind === "header") headers[where.name] = credential;
      else if (where.kind === "bearer") headers.Authorization = `Bearer ${credential}`;
      else missing.push(`${name} (${where.what}, which this client cannot send)`);
    }
    if (missing.length === 0) return headers;
    problems.push(`${names.join(" + ")}: no ${missing.join(", ")}`);
  }
  throw new A2AAuthError(`no credentials for any of the card's security requirements (${problems.join("; ")})`);
}

// How requests reach a node: one protocol binding of the card's supportedInterfaces. The
// client speaks to a Transport only, so a binding is one more implementation of `call` and
// `open`. JSON-RPC is the binding the contract declares today: requests and answers are typed
// by the generated `paths` through openapi-fetch.

import createClient from "openapi-fetch";
import type { JsonRpcRequest, JsonRpcResponse, paths } from "./generated/schema.js";
import {
  A2A_VERSION_HEADER,
  LAST_EVENT_ID_HEADER,
  PATHS,
  type Dialect,
  type MethodTable,
} from "./generated/spec.js";
import { A2AError, A2AHttpError, A2AProtocolError } from "./errors.js";
import { readEvents } from "./sse.js";

export type MethodName = keyof MethodTable;
/** A method's params as a caller gives them: `method` is the envelope's (envelope precedence),
 * so the transport fills it in. */
export type Params<M extends MethodName> = Omit<MethodTable[M]["params"], "method">;
export type Result<M extends MethodName> = MethodTable[M]["result"];

// Every envelope the client builds is a request the contract accepts: this fails to compile
// when a method's params stop matching its request envelope in the spec.
type Envelope<M extends MethodName> = { jsonrpc: "2.0"; id: number; method: M; params: MethodTable[M]["params"] };
type EveryEnvelopeIsARequest = { [M in MethodName]: Envelope<M> extends JsonRpcRequest ? true : M }[MethodName];
const everyEnvelopeIsARequest: EveryEnvelopeIsARequest = true;
void everyEnvelopeIsARequest;

export interface CallOptions {
  signal?: AbortSignal;
}

export interface OpenOptions extends CallOptions {
  /** Resume after this event (the SSE id of the last event received). */
  lastEventId?: string;
}

/** One event of a stream: its SSE id and its result, the envelope taken off. */
export interface StreamedResult {
  id: string | undefined;
  result: unknown;
}

export interface Transport {
  call(method: MethodName, params: unknown, options?: CallOptions): Promise<unknown>;
  open(method: MethodName, params: unknown, options?: OpenOptions): Promise<AsyncIterable<StreamedResult>>;
}

export interface RetryOptions {
  /** Attempts in all, the first included (default 3; 1 never retries). */
  attempts?: number;
  /** The longest Retry-After honoured, in seconds (default 60); a longer one fails at once. */
  maxDelaySeconds?: number;
  /** Told before each wait. */
  onRetry?: (retry: { attempt: number; delayMs: number; error: A2AError }) => void;
}

export interface TransportOptions {
  dialect: Dialect;
  /** Sent with every request: the credentials the card asks for, and any of the caller's. */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  retry?: RetryOptions;
}

/** Where a JSON-RPC endpoint URL points in the contract: the node's base URL (any path prefix
 * in front of the node kept) and the agent, for an agent's own endpoint. */
export interface Endpoint {
  baseUrl: string;
  agentId?: string;
}

function templatePattern(template: string): RegExp {
  const escaped = template.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\\\{[a-z_]+\\\}/g, "([^/]+)");
  return new RegExp(`${escaped.replace(/\/$/, "")}/?$`);
}

/** Match a URL against one of the contract's path templates; null when it is not one. */
export function matchPath(url: string, template: string): { baseUrl: string; param?: string } | null {
  const parsed = new URL(url);
  const found = templatePattern(template).exec(parsed.pathname);
  if (found === null) return null;
  const baseUrl = parsed.origin + parsed.pathname.slice(0, found.index);
  return found[1] === undefined ? { baseUrl } : { baseUrl, param: decodeURIComponent(found[1]) };
}

export function endpointOf(url: string): Endpoint {
  const agent = matchPath(url, PATHS.AGENT_RPC);
  if (agent !== null) return { baseUrl: agent.baseUrl, agentId: agent.param };
  const company = matchPath(url, PATHS.RPC);
  if (company !== null) return { baseUrl: company.baseUrl };
  throw new Error(`${url} is not a JSON-RPC endpoint of this contract (${PATHS.RPC}, ${PATHS.AGENT_RPC})`);
}

function retryAfterSeconds(response: Response): number | undefined {
  const value = response.headers.get("retry-after");
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

function isEnvelope(body: unknown): body is JsonRpcResponse {
  return typeof body === "object" && body !== null && (body as { jsonrpc?: unknown }).jsonrpc === "2.0";
}

/** The error an answer that is not a success stands for. */
function failure(body: unknown, response: Response): Error {
  if (isEnvelope(body) && "error" in body) {
    return new A2AError(body.error, response.status, retryAfterSeconds(response));
  }
  return new A2AHttpError(response.status, typeof body === "string" ? body : JSON.stringify(body));
}

function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done(): void {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }
    function aborted(): void {
      clearTimeout(timer);
      reject(signal?.reason);
    }
    signal?.addEventListener("abort", aborted, { once: true });
  });
}

export class JsonRpcTransport implements Transport {
  readonly endpoint: Endpoint;
  private readonly api;
  private readonly headers: Record<string, string>;
  private nextId = 1;

  constructor(
    url: string,
    private readonly options: TransportOptions,
  ) {
    this.endpoint = endpointOf(url);
    this.api = createClient<paths>({ baseUrl: this.endpoint.baseUrl, fetch: options.fetch });
    this.headers = { ...options.headers, [A2A_VERSION_HEADER]: options.dialect };
  }

  async call(method: MethodName, params: unknown, options: CallOptions = {}): Promise<unknown> {
    const { body, response } = await this.exchange(method, params, "json", options);
    if (response.status !== 200 || !isEnvelope(body)) throw failure(body, response);
    if ("error" in body) throw new A2AError(body.error, response.status);
    return body.result;
  }

  async open(method: MethodName, params: unknown, options: OpenOptions = {}): Promise<AsyncIterable<StreamedResult>> {
    const { body, response } = await this.exchange(method, params, "stream", options);
    if (response.status !== 200) throw failure(body, response);
    const stream = body as ReadableStream<Uint8Array> | null;
    if (stream === null) throw new A2AProtocolError("a stream answer without a body");
    if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      // A refusal before the first event is a plain JSON-RPC answer.
      const text = await new Response(stream).text();
      throw failure(parseJson(text), response);
    }
    return results(stream, response.status);
  }

  /** One request, retried while the node answers 429 with a Retry-After within bounds. */
  private async exchange(
    method: MethodName,
    params: unknown,
    parseAs: "json" | "stream",
    options: OpenOptions,
  ): Promise<{ body: unknown; response: Response }> {
    const retry = this.options.retry ?? {};
    const attempts = retry.attempts ?? 3;
    const maxDelay = retry.maxDelaySeconds ?? 60;
    for (let attempt = 1; ; attempt++) {
      const answer = await this.post(method, params, parseAs, options).catch((error: unknown) => {
        // openapi-fetch parses a 200 answer as JSON: one that is not is unreadable, not a fault.
        throw error instanceof SyntaxError ? new A2AProtocolError(`an answer that is not JSON: ${error.message}`) : error;
      });
      const body = answer.response.ok ? answer.data : answer.error;
      if (answer.response.status !== 429) return { body, response: answer.response };
      const error = failure(body, answer.response);
      const delay = error instanceof A2AError ? error.retryAfter : undefined;
      if (!(error instanceof A2AError) || attempt >= attempts || delay === undefined || delay > maxDelay) throw error;
      retry.onRetry?.({ attempt, delayMs: delay * 1000, error });
      await wait(delay * 1000, options.signal);
    }
  }

  private post(method: MethodName, params: unknown, parseAs: "json" | "stream", options: OpenOptions) {
    const body = { jsonrpc: "2.0", id: this.nextId++, method, params: { ...(params as object), method } } as JsonRpcRequest;
    const header = options.lastEventId === undefined ? {} : { [LAST_EVENT_ID_HEADER]: options.lastEventId };
    const init = { body, headers: this.headers, parseAs, signal: options.signal };
    const { agentId } = this.endpoint;
    return agentId === undefined
      ? this.api.POST(PATHS.RPC, { ...init, params: { header } })
      : this.api.POST(PATHS.AGENT_RPC, { ...init, params: { header, path: { agent_id: agentId } } });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The results of a JSON-RPC event stream; an error event is thrown as the A2AError it is. */
async function* results(body: ReadableStream<Uint8Array>, status: number): AsyncGenerator<StreamedResult> {
  for await (const event of readEvents(body)) {
    const envelope = parseJson(event.data);
    if (!isEnvelope(envelope)) throw new A2AProtocolError(`an event that is not a JSON-RPC response: ${event.data.slice(0, 200)}`);
    if ("error" in envelope) throw new A2AError(envelope.error, status);
    yield { id: event.id, result: envelope.result };
  }
}

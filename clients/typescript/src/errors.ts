// What a call can fail with. A JSON-RPC error is an A2AError whatever the HTTP status: the
// gates (401, 403), the rate limit (429) and the method's own refusals (HTTP 200) alike, each
// typed by its code and its reason.

import type { JsonRpcError } from "./generated/schema.js";
import { ERRORS, type ErrorReason } from "./generated/spec.js";

const REASON_BY_CODE: ReadonlyMap<number, ErrorReason> = new Map(
  Object.values(ERRORS).map((e) => [e.code, e.reason]),
);

/** A JSON-RPC error the node (or a peer) answered. */
export class A2AError extends Error {
  override readonly name = "A2AError";
  /** The JSON-RPC error code (ERRORS.TASK_NOT_FOUND.code is -32001). */
  readonly code: number;
  /**
   * What went wrong, as A2A 1.0's ErrorInfo spells it (TASK_NOT_FOUND, UNAUTHENTICATED,
   * RATE_LIMITED, ...): ErrorInfo.reason when the answer carries one, else the name the spec
   * gives the code. A code the spec does not know gives UNKNOWN.
   */
  readonly reason: ErrorReason | "UNKNOWN" | (string & {});
  /** The error's `data`: ErrorData in 0.3, the 1.0 array of typed details in 1.0. */
  readonly data: JsonRpcError["data"];
  /** The HTTP status the error came with: 200 for a method's refusal. */
  readonly httpStatus: number;
  /** Seconds the node asked to wait (Retry-After), on a 429. */
  readonly retryAfter: number | undefined;

  constructor(error: JsonRpcError, httpStatus: number, retryAfter?: number) {
    super(error.message);
    this.code = error.code;
    this.reason = reasonOf(error);
    this.data = error.data;
    this.httpStatus = httpStatus;
    this.retryAfter = retryAfter;
  }
}

function reasonOf(error: JsonRpcError): string {
  if (Array.isArray(error.data)) {
    for (const detail of error.data) {
      if ("reason" in detail) return detail.reason;
    }
  }
  return REASON_BY_CODE.get(error.code) ?? "UNKNOWN";
}

/** An HTTP answer that is not a JSON-RPC envelope (a disabled gateway's 404, a proxy's 502). */
export class A2AHttpError extends Error {
  override readonly name = "A2AHttpError";
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}`);
  }
}

/** An answer the client cannot read: not JSON, not an envelope, an SSE event without data. */
export class A2AProtocolError extends Error {
  override readonly name = "A2AProtocolError";
}

/** The card asks for credentials the client was not given, or for a scheme it cannot send. */
export class A2AAuthError extends Error {
  override readonly name = "A2AAuthError";
}

/** Whether `error` is an A2AError with this reason. */
export function isA2AError(error: unknown, reason?: ErrorReason): error is A2AError {
  return error instanceof A2AError && (reason === undefined || error.reason === reason);
}

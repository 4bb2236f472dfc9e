// The client: the A2A operations by name, in either dialect, over a Transport chosen from the
// card. Everything here is spelled in generated types and constants: a method's params and
// result come from MethodTable, its name from METHODS.

import createClient from "openapi-fetch";
import type { AgentCard, paths, V1AgentCard } from "./generated/schema.js";
import { A2A_VERSION_HEADER, METHODS, PATHS, type Dialect } from "./generated/spec.js";
import { authHeaders, type Credentials } from "./auth.js";
import { A2AHttpError } from "./errors.js";
import { TaskStream, type StreamOptions } from "./stream.js";
import {
  JsonRpcTransport,
  matchPath,
  type CallOptions,
  type MethodName,
  type Params,
  type Result,
  type RetryOptions,
  type Transport,
} from "./transport.js";
import type { MethodTable } from "./generated/spec.js";

/** The card document a dialect reads: 1.0's own, or the default one (0.3 members and 1.0's
 * supportedInterfaces). */
export type Card<D extends Dialect> = D extends "1.0" ? V1AgentCard : AgentCard;

/** The methods of a dialect, and those that answer a stream. */
export type MethodsOf<D extends Dialect> = { [M in MethodName]: MethodTable[M]["dialect"] extends D ? M : never }[MethodName];
export type StreamingMethodsOf<D extends Dialect> = {
  [M in MethodsOf<D>]: MethodTable[M]["stream"] extends true ? M : never;
}[MethodsOf<D>];

/** Each operation's method in each dialect (ListTasks is 1.0's alone). */
const VERBS = {
  "0.3": {
    sendMessage: METHODS.MESSAGE_SEND,
    getTask: METHODS.TASKS_GET,
    cancelTask: METHODS.TASKS_CANCEL,
    streamMessage: METHODS.MESSAGE_STREAM,
    subscribe: METHODS.TASKS_RESUBSCRIBE,
    setPushConfig: METHODS.TASKS_PUSH_NOTIFICATION_CONFIG_SET,
    getPushConfig: METHODS.TASKS_PUSH_NOTIFICATION_CONFIG_GET,
    listPushConfigs: METHODS.TASKS_PUSH_NOTIFICATION_CONFIG_LIST,
    deletePushConfig: METHODS.TASKS_PUSH_NOTIFICATION_CONFIG_DELETE,
    getExtendedCard: METHODS.AGENT_GET_AUTHENTICATED_EXTENDED_CARD,
  },
  "1.0": {
    sendMessage: METHODS.V1_SEND_MESSAGE,
    getTask: METHODS.V1_GET_TASK,
    cancelTask: METHODS.V1_CANCEL_TASK,
    streamMessage: METHODS.V1_SEND_STREAMING_MESSAGE,
    subscribe: METHODS.V1_SUBSCRIBE_TO_TASK,
    setPushConfig: METHODS.V1_CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
    getPushConfig: METHODS.V1_GET_TASK_PUSH_NOTIFICATION_CONFIG,
    listPushConfigs: METHODS.V1_LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
    deletePushConfig: METHODS.V1_DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
    getExtendedCard: METHODS.V1_GET_EXTENDED_AGENT_CARD,
  },
} as const satisfies Record<Dialect, Record<string, MethodName>>;

type Verb = keyof (typeof VERBS)[Dialect];
type VerbMethod<D extends Dialect, V extends Verb> = (typeof VERBS)[D][V];
type VerbParams<D extends Dialect, V extends Verb> = Params<VerbMethod<D, V>>;
type VerbResult<D extends Dialect, V extends Verb> = Result<VerbMethod<D, V>>;

export interface ClientOptions<D extends Dialect> {
  /** The JSON-RPC endpoint: a card's url (or its supportedInterfaces entry's). */
  url: string;
  dialect: D;
  /** Sent with every request (`connect` puts the card's credentials here). */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  /** How 429 answers are retried (their Retry-After honoured). */
  retry?: RetryOptions;
  /** How streams resume after a dropped connection. */
  stream?: Omit<StreamOptions, "signal">;
  /** The card the client was made from, if any. */
  card?: Card<D>;
}

export interface ConnectOptions<D extends Dialect> extends Omit<ClientOptions<D>, "url" | "dialect" | "card"> {
  /** The dialect to speak (default 1.0); the card must offer it. */
  dialect?: D;
  /** A credential per security scheme of the card, by the scheme's name there. */
  credentials?: Credentials;
}

export interface FetchCardOptions<D extends Dialect> {
  dialect?: D;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

/**
 * An agent card. `url` is a node's base URL (the company card), or a card's own URL (the
 * company's or an agent's). With dialect 1.0 the card's 1.0 document is asked for.
 */
export async function fetchCard<D extends Dialect = "1.0">(url: string, options: FetchCardOptions<D> = {}): Promise<Card<D>> {
  const dialect = options.dialect ?? "1.0";
  const agent = matchPath(url, PATHS.AGENT_CARD);
  const company = agent === null ? matchPath(url, PATHS.COMPANY_CARD) : null;
  const baseUrl = agent?.baseUrl ?? company?.baseUrl ?? url.replace(/\/+$/, "");
  const api = createClient<paths>({ baseUrl, fetch: options.fetch });
  // The default document serves 0.3 readers; 1.0 readers ask for their own.
  const header = dialect === "1.0" ? { [A2A_VERSION_HEADER]: dialect } : {};
  const init = { signal: options.signal };
  const answer =
    agent?.param !== undefined
      ? await api.GET(PATHS.AGENT_CARD, { ...init, params: { header, path: { agent_id: agent.param } } })
      : await api.GET(PATHS.COMPANY_CARD, { ...init, params: { header } });
  if (answer.data === undefined) {
    throw new A2AHttpError(answer.response.status, JSON.stringify(answer.error ?? null));
  }
  return answer.data as Card<D>;
}

function offers(version: string, dialect: Dialect): boolean {
  return version === dialect || version.startsWith(`${dialect}.`);
}

/** The JSON-RPC endpoint a card offers for a dialect. */
export function endpointFor(card: AgentCard | V1AgentCard, dialect: Dialect): string {
  const interfaces = card.supportedInterfaces ?? [];
  const found = interfaces.find((i) => i.protocolBinding === "JSONRPC" && offers(i.protocolVersion, dialect));
  if (found !== undefined) return found.url;
  const legacy = card as AgentCard;
  if (dialect === "0.3" && typeof legacy.url === "string" && offers(legacy.protocolVersion, dialect)) return legacy.url;
  throw new Error(`the card offers no JSON-RPC interface in A2A ${dialect}`);
}

export class A2AClient<D extends Dialect = "1.0"> {
  readonly dialect: D;
  readonly card: Card<D> | undefined;
  private readonly transport: Transport;
  private readonly streamOptions: Omit<StreamOptions, "signal">;

  constructor(options: ClientOptions<D>) {
    this.dialect = options.dialect;
    this.card = options.card;
    this.transport = new JsonRpcTransport(options.url, options);
    this.streamOptions = options.stream ?? {};
  }

  /**
   * A client for the node (or agent) whose card is at `url` (a card URL, or a node's base URL
   * for its company card): the card says where to send requests and which credentials to
   * present.
   */
  static async connect<D extends Dialect = "1.0">(url: string, options: ConnectOptions<D> = {}): Promise<A2AClient<D>> {
    const dialect = (options.dialect ?? "1.0") as D;
    const card = await fetchCard(url, { dialect, fetch: options.fetch });
    const headers = { ...authHeaders(card, options.credentials ?? {}), ...options.headers };
    return new A2AClient<D>({ ...options, url: endpointFor(card, dialect), dialect, headers, card });
  }

  /** Any method of the dialect that answers once. */
  call<M extends Exclude<MethodsOf<D>, StreamingMethodsOf<D>>>(method: M, params: Params<M>, options?: CallOptions): Promise<Result<M>> {
    return this.transport.call(method, params, options) as Promise<Result<M>>;
  }

  /** Any method of the dialect that answers a stream; resumed after a dropped connection. */
  stream<M extends StreamingMethodsOf<D>>(
    method: M,
    params: Params<M>,
    options: CallOptions & { lastEventId?: string } = {},
  ): TaskStream<Result<M>> {
    const settings = { ...this.streamOptions, signal: options.signal };
    const subscribe = VERBS[this.dialect].subscribe;
    return new TaskStream<Result<M>>(
      (lastEventId) => this.transport.open(method, params, { ...options, lastEventId }),
      (taskId) => (lastEventId) => this.transport.open(subscribe, { id: taskId }, { ...options, lastEventId }),
      settings,
      undefined,
      options.lastEventId,
    );
  }

  private verb<V extends Verb>(verb: V, params: unknown, options?: CallOptions): Promise<VerbResult<D, V>> {
    return this.transport.call(VERBS[this.dialect][verb], params, options) as Promise<VerbResult<D, V>>;
  }

  /** Send a message: a new task, or the next turn of one (message.taskId). */
  sendMessage(params: VerbParams<D, "sendMessage">, options?: CallOptions): Promise<VerbResult<D, "sendMessage">> {
    return this.verb("sendMessage", params, options);
  }

  getTask(params: VerbParams<D, "getTask">, options?: CallOptions): Promise<VerbResult<D, "getTask">> {
    return this.verb("getTask", params, options);
  }

  cancelTask(params: VerbParams<D, "cancelTask">, options?: CallOptions): Promise<VerbResult<D, "cancelTask">> {
    return this.verb("cancelTask", params, options);
  }

  /** The caller's tasks, newest first, a page at a time (A2A 1.0 only). */
  listTasks(this: A2AClient<"1.0">, params: Params<"ListTasks"> = {}, options?: CallOptions): Promise<Result<"ListTasks">> {
    return this.transport.call(METHODS.V1_LIST_TASKS, params, options) as Promise<Result<"ListTasks">>;
  }

  /** Send a message and follow its task as it works: each event as it happens. */
  streamMessage(params: VerbParams<D, "streamMessage">, options?: CallOptions): TaskStream<VerbResult<D, "streamMessage">> {
    return this.stream(VERBS[this.dialect].streamMessage as StreamingMethodsOf<D>, params as never, options) as TaskStream<
      VerbResult<D, "streamMessage">
    >;
  }

  /** Follow a task: from `lastEventId` on (the events after it replayed first), or from now. */
  subscribe(
    params: VerbParams<D, "subscribe">,
    options: CallOptions & { lastEventId?: string } = {},
  ): TaskStream<VerbResult<D, "subscribe">> {
    const method = VERBS[this.dialect].subscribe;
    const settings = { ...this.streamOptions, signal: options.signal };
    return new TaskStream<VerbResult<D, "subscribe">>(
      (lastEventId) => this.transport.open(method, params, { ...options, lastEventId }),
      () => (lastEventId) => this.transport.open(method, params, { ...options, lastEventId }),
      settings,
      params.id,
      options.lastEventId,
    );
  }

  setPushConfig(params: VerbParams<D, "setPushConfig">, options?: CallOptions): Promise<VerbResult<D, "setPushConfig">> {
    return this.verb("setPushConfig", params, options);
  }

  getPushConfig(params: VerbParams<D, "getPushConfig">, options?: CallOptions): Promise<VerbResult<D, "getPushConfig">> {
    return this.verb("getPushConfig", params, options);
  }

  listPushConfigs(params: VerbParams<D, "listPushConfigs">, options?: CallOptions): Promise<VerbResult<D, "listPushConfigs">> {
    return this.verb("listPushConfigs", params, options);
  }

  deletePushConfig(params: VerbParams<D, "deletePushConfig">, options?: CallOptions): Promise<VerbResult<D, "deletePushConfig">> {
    return this.verb("deletePushConfig", params, options);
  }

  /** The card with the skills only admitted peers see. */
  getExtendedCard(params?: VerbParams<D, "getExtendedCard">, options?: CallOptions): Promise<VerbResult<D, "getExtendedCard">> {
    return this.verb("getExtendedCard", params ?? {}, options);
  }
}

// What the live tests share: the node the Python harness started (described by the JSON file
// SYNTHORG_TEST_FIXTURE names), clients for its peers, and a TCP proxy that can drop
// connections mid-stream.

import { readFileSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import {
  A2AClient,
  type Credentials,
  type Dialect,
  type Message,
  type StreamEvent,
  type V1Message,
  type V1StreamResponse,
} from "../src/index.js";

export interface Peer {
  name: string;
  key: string;
}

export interface Fixture {
  url: string;
  peers: { main: Peer; bearer: Peer; limited: Peer; unlisted: Peer };
  agents: { echo: string; parker: string; writer: string; replier: string };
  /** The scenario list the generated clients share. */
  scenarios: string;
  /** A push url the node may reach (a catalog peer's endpoint). */
  pushUrl: string;
}

function load(): Fixture {
  const path = process.env.SYNTHORG_TEST_FIXTURE;
  if (path === undefined) {
    throw new Error("SYNTHORG_TEST_FIXTURE is not set: run these tests through tests/clients/test_typescript.py");
  }
  return JSON.parse(readFileSync(path, "utf8")) as Fixture;
}

export const fixture = load();
export const DIALECTS: readonly Dialect[] = ["0.3", "1.0"];

/** The card's schemes, by their names there: a peer's name and its key. */
export function apiKeyCredentials(peer: Peer): Credentials {
  return { PeerName: peer.name, ApiKey: peer.key };
}

export function connectAs<D extends Dialect>(dialect: D, peer: Peer = fixture.peers.main, url = fixture.url) {
  return A2AClient.connect<D>(url, { dialect, credentials: apiKeyCredentials(peer) });
}

export function unique(prefix: string): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

/** A text message in a dialect's shape. */
export function textMessage(dialect: "1.0", text: string): V1Message;
export function textMessage(dialect: "0.3", text: string): Message;
export function textMessage(dialect: Dialect, text: string): V1Message | Message;
export function textMessage(dialect: Dialect, text: string): V1Message | Message {
  const messageId = unique("msg");
  return dialect === "1.0"
    ? { messageId, role: "ROLE_USER", parts: [{ text }] }
    : { kind: "message", messageId, role: "user", parts: [{ kind: "text", text }] };
}

/** The state a stream event reports, if it reports one (a task, or a status update). */
export function stateOf(event: StreamEvent | V1StreamResponse): string | undefined {
  if ("statusUpdate" in event) return event.statusUpdate.status.state;
  if ("task" in event) return event.task.status.state;
  if ("kind" in event && (event.kind === "status-update" || event.kind === "task")) return event.status.state;
  return undefined;
}

export function isArtifactUpdate(event: StreamEvent | V1StreamResponse): boolean {
  return "artifactUpdate" in event || ("kind" in event && event.kind === "artifact-update");
}

/** A 0.3 state in the 1.0 dialect's spelling (ProtoJSON enum names). */
export function stateIn(dialect: Dialect, state: string): string {
  return dialect === "1.0" ? `TASK_STATE_${state.toUpperCase().replaceAll("-", "_")}` : state;
}

/** A TCP proxy in front of the node: every connection passes through until `drop()` cuts
 * those open, and each connection's request head is kept. */
export class DroppingProxy {
  private readonly server: Server;
  private readonly open = new Set<Socket>();
  readonly requests: string[] = [];
  port = 0;

  constructor(private readonly target: URL) {
    this.server = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname);
      this.open.add(client);
      let head = "";
      client.on("data", (chunk: Buffer) => {
        if (!head.includes("\r\n\r\n")) {
          head += chunk.toString("latin1");
          if (head.includes("\r\n\r\n")) this.requests.push(head.slice(0, head.indexOf("\r\n\r\n")));
        }
      });
      client.pipe(upstream);
      upstream.pipe(client);
      const close = (): void => {
        this.open.delete(client);
        client.destroy();
        upstream.destroy();
      };
      client.on("error", close);
      upstream.on("error", close);
      client.on("close", close);
      upstream.on("close", close);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    this.port = address.port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Cut every connection open now, as a network failure would (a reset, no clean end). */
  drop(): void {
    for (const socket of this.open) socket.resetAndDestroy();
    this.open.clear();
  }

  async stop(): Promise<void> {
    this.drop();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

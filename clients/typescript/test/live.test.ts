// The client against a live node: cards, send, get, list, cancel, streams (resumed after a
// dropped connection), push configs, a direct Message reply, every gate refusal, the rate
// limit's 429 with Retry-After honoured, and an unknown task, in both dialects.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  A2AAuthError,
  A2AClient,
  A2AError,
  ERRORS,
  authHeaders,
  endpointFor,
  fetchCard,
  isA2AError,
  type Dialect,
} from "../src/index.js";
import {
  DIALECTS,
  DroppingProxy,
  apiKeyCredentials,
  connectAs,
  fixture,
  isArtifactUpdate,
  stateIn,
  stateOf,
  textMessage,
  unique,
} from "./support.js";

const { main, bearer, limited, unlisted } = fixture.peers;

/** The task a 0.3 or 1.0 send answered. */
function taskOf(answer: unknown): { id: string; contextId: string; status: { state: string } } {
  const raw = answer as Record<string, unknown>;
  return ("task" in raw ? raw.task : raw) as { id: string; contextId: string; status: { state: string } };
}

function rejectsWith(reason: string, code: number, httpStatus: number) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof A2AError, String(error));
    assert.equal(error.reason, reason);
    assert.equal(error.code, code);
    assert.equal(error.httpStatus, httpStatus);
    return true;
  };
}

describe("cards", () => {
  test("the default card reads in 0.3 and names both dialects' endpoints", async () => {
    const card = await fetchCard(fixture.url, { dialect: "0.3" });
    assert.equal(card.url, `${fixture.url}/api/v1/a2a/`);
    assert.equal(endpointFor(card, "0.3"), card.url);
    assert.equal(endpointFor(card, "1.0"), card.url);
    assert.ok(card.security !== undefined && card.security.length > 0);
  });

  test("the 1.0 document is asked for with A2A-Version and carries 1.0's members only", async () => {
    const card = await fetchCard(fixture.url);
    assert.ok(!("url" in card));
    assert.equal(card.supportedInterfaces[0]?.protocolVersion, "1.0");
    assert.ok(card.securityRequirements !== undefined && card.securityRequirements.length > 0);
  });

  test("an agent's card points at the agent's own endpoint", async () => {
    const url = `${fixture.url}/.well-known/agents/${fixture.agents.parker}/agent-card.json`;
    for (const dialect of DIALECTS) {
      const card = await fetchCard(url, { dialect });
      assert.equal(endpointFor(card, dialect), `${fixture.url}/api/v1/a2a/agents/${fixture.agents.parker}/`);
    }
  });

  test("the extended card is behind the gates, in each dialect's shape", async () => {
    const v03 = await connectAs("0.3");
    assert.ok("url" in (await v03.getExtendedCard()));
    const v1 = await connectAs("1.0");
    assert.ok("supportedInterfaces" in (await v1.getExtendedCard()));
  });
});

describe("tasks, A2A 1.0", () => {
  let client: A2AClient<"1.0">;
  before(async () => {
    client = await connectAs("1.0");
  });

  test("send, then get", async () => {
    const answer = await client.sendMessage({ message: textMessage("1.0", "hello") });
    assert.ok("task" in answer);
    assert.equal(answer.task.status.state, "TASK_STATE_COMPLETED");
    assert.equal(answer.task.artifacts?.[0]?.parts[0] && "text" in answer.task.artifacts[0].parts[0] ? answer.task.artifacts[0].parts[0].text : undefined, "hello");
    const got = await client.getTask({ id: answer.task.id, historyLength: 1 });
    assert.equal(got.id, answer.task.id);
    assert.equal(got.history?.length, 1);
  });

  test("list pages the caller's tasks in a context, newest first", async () => {
    const first = taskOf(await client.sendMessage({ message: textMessage("1.0", "one") }));
    const second = taskOf(
      await client.sendMessage({ message: { ...textMessage("1.0", "two"), contextId: first.contextId } }),
    );
    assert.notEqual(second.id, first.id);
    const page = await client.listTasks({ contextId: first.contextId, pageSize: 1 });
    assert.equal(page.totalSize, 2);
    assert.deepEqual(page.tasks.map((t) => t.id), [second.id]);
    assert.notEqual(page.nextPageToken, "");
    const rest = await client.listTasks({ contextId: first.contextId, pageSize: 1, pageToken: page.nextPageToken });
    assert.deepEqual(rest.tasks.map((t) => t.id), [first.id]);
    assert.equal(rest.nextPageToken, "");
  });

  test("cancel a task that waits for input", async () => {
    const parker = await A2AClient.connect(`${fixture.url}/.well-known/agents/${fixture.agents.parker}/agent-card.json`, {
      credentials: apiKeyCredentials(main),
    });
    const parked = taskOf(await parker.sendMessage({ message: textMessage("1.0", "wait") }));
    assert.equal(parked.status.state, "TASK_STATE_INPUT_REQUIRED");
    const canceled = await client.cancelTask({ id: parked.id });
    assert.equal(canceled.status.state, "TASK_STATE_CANCELED");
    await assert.rejects(client.cancelTask({ id: parked.id }), rejectsWith("TASK_NOT_CANCELABLE", -32002, 200));
  });
});

describe("tasks, A2A 0.3", () => {
  test("send, get and cancel", async () => {
    const client = await connectAs("0.3");
    const task = await client.sendMessage({ message: textMessage("0.3", "hello") });
    assert.equal(task.kind, "task");
    assert.ok(task.kind === "task" && task.status.state === "completed");
    assert.equal((await client.getTask({ id: task.id })).status.state, "completed");
    const parker = await A2AClient.connect(`${fixture.url}/.well-known/agents/${fixture.agents.parker}/agent-card.json`, {
      dialect: "0.3",
      credentials: apiKeyCredentials(main),
    });
    const parked = await parker.sendMessage({ message: textMessage("0.3", "wait") });
    assert.ok(parked.kind === "task" && parked.status.state === "input-required");
    assert.equal((await client.cancelTask({ id: parked.id })).status.state, "canceled");
  });

  test("ListTasks is not a 0.3 method", async () => {
    const client = await connectAs("0.3");
    // @ts-expect-error listTasks needs a 1.0 client
    await assert.rejects(client.listTasks());
  });
});

describe("an unknown task", () => {
  for (const dialect of DIALECTS) {
    test(`is not found, A2A ${dialect}`, async () => {
      const client = await connectAs(dialect);
      const missing = rejectsWith("TASK_NOT_FOUND", ERRORS.TASK_NOT_FOUND.code, 200);
      await assert.rejects(client.getTask({ id: "no-such-task" }), missing);
      await assert.rejects(client.cancelTask({ id: "no-such-task" }), missing);
      const stream = client.subscribe({ id: "no-such-task" });
      await assert.rejects(async () => {
        for await (const _ of stream) assert.fail("no event for an unknown task");
      }, missing);
    });
  }
});

describe("streams", () => {
  const writerCard = `${fixture.url}/.well-known/agents/${fixture.agents.writer}/agent-card.json`;

  for (const dialect of DIALECTS) {
    test(`streamMessage yields the task's events in order until the last, A2A ${dialect}`, async () => {
      const client = await A2AClient.connect(writerCard, { dialect, credentials: apiKeyCredentials(main) });
      const stream = client.streamMessage({ message: textMessage(dialect, "stream me") } as never);
      const ids: number[] = [];
      const states: string[] = [];
      for await (const event of stream) {
        ids.push(Number(stream.lastEventId));
        const state = stateOf(event);
        if (state !== undefined) states.push(state);
      }
      assert.ok(ids.length >= 3, `events: ${ids.length}`);
      assert.deepEqual([...ids].sort((a, b) => a - b), ids);
      assert.equal(new Set(ids).size, ids.length);
      assert.equal(states.at(-1), stateIn(dialect, "completed"));
      assert.equal(stream.resumes, 0);
    });

    test(`a dropped connection is resumed with Last-Event-ID, nothing lost or repeated, A2A ${dialect}`, async () => {
      const proxy = await new DroppingProxy(new URL(fixture.url)).start();
      try {
        const card = await fetchCard(writerCard, { dialect });
        const endpoint = endpointFor(card, dialect).replace(fixture.url, proxy.url);
        const resumed: (string | undefined)[] = [];
        const client = new A2AClient({
          url: endpoint,
          dialect,
          headers: authHeaders(card, apiKeyCredentials(main)),
          stream: { onResume: ({ lastEventId }) => resumed.push(lastEventId) },
        });
        const stream = client.streamMessage({ message: textMessage(dialect, "drop me") } as never);
        const ids: string[] = [];
        let chunks = 0;
        for await (const event of stream) {
          ids.push(String(stream.lastEventId));
          if (isArtifactUpdate(event)) chunks++;
          if (ids.length === 2) proxy.drop(); // mid-stream, after the second event
        }
        assert.equal(stream.resumes, 1);
        // It resumed from an event it had yielded (the second, or one read with it before
        // the failure showed), asking the node for the events after it.
        const from = resumed[0];
        assert.ok(resumed.length === 1 && from !== undefined && ids.slice(1).includes(from), String(resumed));
        const last = proxy.requests.at(-1) ?? "";
        assert.match(last, new RegExp(`^last-event-id: ${from}$`, "im"));
        // Nothing lost, nothing twice: ids rise strictly, and every chunk of the answer came.
        const numbers = ids.map(Number);
        assert.ok(numbers.every((n, i) => i === 0 || n > (numbers[i - 1] ?? n)), ids.join(","));
        assert.equal(chunks, 5, "every chunk of the answer");
        // And it missed nothing: the whole log after the first events is what the task holds.
        const task = taskOf(await client.getTask({ id: String(stream.taskId) }));
        assert.equal(task.status.state, stateIn(dialect, "completed"));
      } finally {
        await proxy.stop();
      }
    });

    test(`subscribe from a Last-Event-ID replays the events after it, A2A ${dialect}`, async () => {
      const client = await A2AClient.connect(writerCard, { dialect, credentials: apiKeyCredentials(main) });
      const first = client.streamMessage({ message: textMessage(dialect, "again") } as never);
      const ids: string[] = [];
      for await (const _ of first) ids.push(String(first.lastEventId));
      const later = client.subscribe({ id: String(first.taskId) }, { lastEventId: ids[1] });
      const replayed: string[] = [];
      for await (const _ of later) replayed.push(String(later.lastEventId));
      assert.deepEqual(replayed, ids.slice(2));
    });
  }
});

describe("push notification configs", () => {
  test("set, get, list and delete, A2A 1.0", async () => {
    const parker = await A2AClient.connect(`${fixture.url}/.well-known/agents/${fixture.agents.parker}/agent-card.json`, {
      credentials: apiKeyCredentials(main),
    });
    const task = taskOf(await parker.sendMessage({ message: textMessage("1.0", "notify me") }));
    const made = await parker.setPushConfig({ taskId: task.id, id: "hook-1", url: fixture.pushUrl, token: "t" });
    assert.equal(made.id, "hook-1");
    assert.equal((await parker.getPushConfig({ taskId: task.id, id: "hook-1" })).url, fixture.pushUrl);
    const listed = await parker.listPushConfigs({ taskId: task.id });
    assert.deepEqual(listed.configs.map((c) => c.id), ["hook-1"]);
    assert.equal(await parker.deletePushConfig({ taskId: task.id, id: "hook-1" }), null);
    assert.deepEqual((await parker.listPushConfigs({ taskId: task.id })).configs, []);
  });

  test("set, get, list and delete, A2A 0.3", async () => {
    const parker = await A2AClient.connect(`${fixture.url}/.well-known/agents/${fixture.agents.parker}/agent-card.json`, {
      dialect: "0.3",
      credentials: apiKeyCredentials(main),
    });
    const task = taskOf(await parker.sendMessage({ message: textMessage("0.3", "notify me") }));
    const config = { id: "hook-1", url: fixture.pushUrl };
    const made = await parker.setPushConfig({ taskId: task.id, pushNotificationConfig: config });
    assert.equal(made.pushNotificationConfig.id, "hook-1");
    const got = await parker.getPushConfig({ id: task.id, pushNotificationConfigId: "hook-1" });
    assert.equal(got.pushNotificationConfig.url, fixture.pushUrl);
    assert.equal((await parker.listPushConfigs({ id: task.id })).length, 1);
    assert.equal(await parker.deletePushConfig({ id: task.id, pushNotificationConfigId: "hook-1" }), null);
    assert.equal((await parker.listPushConfigs({ id: task.id })).length, 0);
  });
});

describe("a direct Message reply", () => {
  // The replier agent is an echo agent told to answer with a Message (options: {reply: message}).
  for (const dialect of DIALECTS) {
    test(`is read as a Message, A2A ${dialect}`, async () => {
      const card = `${fixture.url}/.well-known/agents/${fixture.agents.replier}/agent-card.json`;
      const client = await A2AClient.connect(card, { dialect, credentials: apiKeyCredentials(main) });
      const answer = (await client.sendMessage({ message: textMessage(dialect, "reply directly") } as never)) as Record<
        string,
        unknown
      >;
      const isMessage = dialect === "1.0" ? "message" in answer : answer.kind === "message";
      assert.ok(isMessage, `a Message, not ${JSON.stringify(answer).slice(0, 200)}`);
      const message = (dialect === "1.0" ? answer.message : answer) as { role: string; parts: { text?: string }[] };
      assert.match(message.role, /agent/i);
      assert.equal(message.parts[0]?.text, "reply directly");
    });
  }
});

describe("the gates", () => {
  for (const dialect of DIALECTS) {
    const rpc = `${fixture.url}/api/v1/a2a/`;
    const get = (client: A2AClient<Dialect>) => client.getTask({ id: "no-such-task" });

    test(`a key alone names its peer, A2A ${dialect}`, async () => {
      const client = new A2AClient({ url: rpc, dialect, headers: { "X-API-Key": main.key } });
      await assert.rejects(get(client), rejectsWith("TASK_NOT_FOUND", ERRORS.TASK_NOT_FOUND.code, 200));
    });

    test(`an unknown key alone: 401, A2A ${dialect}`, async () => {
      const client = new A2AClient({ url: rpc, dialect, headers: { "X-API-Key": `${main.key}-unknown` } });
      await assert.rejects(get(client), rejectsWith("UNAUTHENTICATED", ERRORS.UNAUTHENTICATED.code, 401));
    });

    test(`a peer not on the allowlist: 403, A2A ${dialect}`, async () => {
      const client = await connectAs(dialect, unlisted);
      await assert.rejects(get(client), rejectsWith("PEER_NOT_ALLOWED", ERRORS.PEER_NOT_ALLOWED.code, 403));
    });

    test(`a wrong key: 401, A2A ${dialect}`, async () => {
      const client = await connectAs(dialect, { name: main.name, key: `${main.key}-wrong` });
      await assert.rejects(get(client), rejectsWith("UNAUTHENTICATED", ERRORS.UNAUTHENTICATED.code, 401));
    });

    test(`a peer name without a key: 401, A2A ${dialect}`, async () => {
      const client = new A2AClient({ url: rpc, dialect, headers: { "X-A2A-Peer-Name": main.name } });
      await assert.rejects(get(client), rejectsWith("UNAUTHENTICATED", ERRORS.UNAUTHENTICATED.code, 401));
    });

    test(`the card's Bearer scheme: admitted with the peer's token, refused with another, A2A ${dialect}`, async () => {
      const good = await A2AClient.connect(fixture.url, { dialect, credentials: { PeerName: bearer.name, Bearer: bearer.key } });
      const task = taskOf(await good.sendMessage({ message: textMessage(dialect, "by bearer") } as never));
      assert.equal(task.status.state, stateIn(dialect, "completed"));
      const wrong = await A2AClient.connect(fixture.url, { dialect, credentials: { PeerName: bearer.name, Bearer: "not-it" } });
      await assert.rejects(get(wrong), rejectsWith("UNAUTHENTICATED", ERRORS.UNAUTHENTICATED.code, 401));
    });
  }

  test("credentials for none of the card's requirements fail before any request", async () => {
    await assert.rejects(A2AClient.connect(fixture.url, { credentials: { PeerName: main.name } }), A2AAuthError);
  });
});

describe("the rate limit", () => {
  test("a 429 carries Retry-After and RATE_LIMITED when retries are off", async () => {
    const client = await A2AClient.connect(fixture.url, { credentials: apiKeyCredentials(limited), retry: { attempts: 1 } });
    let refusal: A2AError | undefined;
    for (let i = 0; i < 20 && refusal === undefined; i++) {
      await client.getTask({ id: unique("t") }).catch((error: unknown) => {
        if (isA2AError(error, "RATE_LIMITED")) refusal = error;
        else if (!isA2AError(error, "TASK_NOT_FOUND")) throw error;
      });
    }
    assert.ok(refusal !== undefined, "the peer's limit was reached");
    assert.equal(refusal.httpStatus, 429);
    assert.equal(refusal.code, ERRORS.RATE_LIMITED.code);
    assert.ok(refusal.retryAfter !== undefined && refusal.retryAfter >= 1);
  });

  test("the client waits as Retry-After says and the call then succeeds", async () => {
    const waits: { delayMs: number; error: A2AError }[] = [];
    const client = await A2AClient.connect(fixture.url, {
      credentials: apiKeyCredentials(limited),
      retry: { attempts: 3, onRetry: ({ delayMs, error }) => waits.push({ delayMs, error }) },
    });
    for (let i = 0; i < 10 && waits.length === 0; i++) {
      const task = taskOf(await client.sendMessage({ message: textMessage("1.0", `try ${i}`) }));
      assert.equal(task.status.state, "TASK_STATE_COMPLETED");
    }
    assert.ok(waits.length > 0, "a 429 was met and retried");
    for (const { delayMs, error } of waits) {
      assert.equal(error.httpStatus, 429);
      assert.equal(error.reason, "RATE_LIMITED");
      assert.equal(delayMs, (error.retryAfter ?? NaN) * 1000);
    }
  });
});

after(() => undefined);

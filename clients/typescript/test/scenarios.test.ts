// The scenario list every generated client runs (tests/clients/scenarios.json), in both
// dialects, through the client's own operations.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { A2AClient, A2AError, type Dialect } from "../src/index.js";
import { DIALECTS, fixture, stateIn, textMessage } from "./support.js";

interface Step {
  call: "send" | "get" | "cancel";
  text?: string;
  agent?: string;
  task?: string;
  credential?: "wrong";
  expect: { state?: string; artifactText?: string; firstHistoryRole?: string; error?: number; http?: number };
}

interface Scenario {
  name: string;
  steps: Step[];
}

const { scenarios } = JSON.parse(readFileSync(fixture.scenarios, "utf8")) as { scenarios: Scenario[] };

/** What a step's answer says, in either dialect. */
interface Seen {
  id: string;
  state: string;
  artifactText: string | undefined;
  firstHistoryRole: string | undefined;
}

function seen(dialect: Dialect, answer: unknown): Seen {
  const raw = answer as Record<string, unknown>;
  const task = (dialect === "1.0" && "task" in raw ? raw.task : raw) as {
    id: string;
    status: { state: string };
    artifacts?: { parts: { text?: string }[] }[];
    history?: { role: string }[];
  };
  const role = task.history?.[0]?.role;
  return {
    id: task.id,
    state: task.status.state,
    artifactText: task.artifacts?.[0]?.parts[0]?.text,
    firstHistoryRole: role === undefined ? undefined : role.replace(/^ROLE_/, "").toLowerCase(),
  };
}

async function client(dialect: Dialect, step: Step) {
  const peer = fixture.peers.main;
  const key = step.credential === "wrong" ? `${peer.key}-wrong` : peer.key;
  const card = step.agent === undefined ? fixture.url : `${fixture.url}/.well-known/agents/${step.agent}/agent-card.json`;
  return A2AClient.connect(card, { dialect, credentials: { PeerName: peer.name, ApiKey: key } });
}

async function run(dialect: Dialect, step: Step, last: string | undefined): Promise<unknown> {
  const c = await client(dialect, step);
  const id = step.task === "$last" ? last : step.task;
  if (step.call === "send") return c.sendMessage({ message: textMessage(dialect, step.text ?? "") } as never);
  assert.ok(id !== undefined, "a step names a task");
  return step.call === "get" ? c.getTask({ id }) : c.cancelTask({ id });
}

for (const dialect of DIALECTS) {
  describe(`the shared scenarios, A2A ${dialect}`, () => {
    for (const scenario of scenarios) {
      test(scenario.name, async () => {
        let last: string | undefined;
        for (const [index, step] of scenario.steps.entries()) {
          const where = `step ${index + 1} (${step.call})`;
          const { expect } = step;
          if (expect.error !== undefined) {
            await assert.rejects(run(dialect, step, last), (error: unknown) => {
              assert.ok(error instanceof A2AError, `${where}: ${String(error)}`);
              assert.equal(error.code, expect.error, where);
              assert.equal(error.httpStatus, expect.http ?? 200, where);
              return true;
            });
            continue;
          }
          const answer = seen(dialect, await run(dialect, step, last));
          last = answer.id;
          if (expect.state !== undefined) assert.equal(answer.state, stateIn(dialect, expect.state), where);
          if (expect.artifactText !== undefined) assert.equal(answer.artifactText, expect.artifactText, where);
          if (expect.firstHistoryRole !== undefined) assert.equal(answer.firstHistoryRole, expect.firstHistoryRole, where);
        }
      });
    }
  });
}

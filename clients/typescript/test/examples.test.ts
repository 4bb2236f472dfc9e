// The README's examples, compiled beside the tests, run against the live node as a user would
// run them: a delegation, a stream, and a refusal reported by its reason.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { promisify } from "node:util";
import { fixture } from "./support.js";

const exec = promisify(execFile);

async function example(name: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = fileURLToPath(new URL(`../examples/${name}.js`, import.meta.url));
  try {
    const { stdout, stderr } = await exec(process.execPath, [script], { env: { ...process.env, ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const { main } = fixture.peers;

test("the delegation example delegates a task and prints the answer", async () => {
  const run = await example("delegate", { A2A_NODE: fixture.url, A2A_PEER: main.name, A2A_KEY: main.key });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^task \S+: TASK_STATE_COMPLETED$/m);
  assert.match(run.stdout, /^Summarise the Q3 report$/m);
});

test("the delegation example reports a refusal by its reason", async () => {
  const run = await example("delegate", { A2A_NODE: fixture.url, A2A_PEER: main.name, A2A_KEY: "not-the-key" });
  assert.equal(run.code, 1);
  assert.match(run.stderr, /^refused: UNAUTHENTICATED \(-32003, HTTP 401\)/m);
});

test("the streaming example prints the task's progress as it happens", async () => {
  const card = `${fixture.url}/.well-known/agents/${fixture.agents.writer}/agent-card.json`;
  const run = await example("stream", { A2A_NODE: card, A2A_PEER: main.name, A2A_KEY: main.key });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout.match(/^chunk: /gm)?.length, 5, run.stdout);
  assert.match(run.stdout, /^status: TASK_STATE_COMPLETED$/m);
});

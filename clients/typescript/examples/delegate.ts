// Delegate a task to a node's agent and print the answer; a refusal is reported by its reason.
// A2A_NODE=http://127.0.0.1:8001 A2A_PEER=synthorg-a A2A_KEY=... node dist/examples/delegate.js
import { A2AClient, A2AError } from "synthorg-a2a-client";

const env = (name: string): string => process.env[name] ?? `(set ${name})`;

try {
  const client = await A2AClient.connect(env("A2A_NODE"), {
    credentials: { PeerName: env("A2A_PEER"), ApiKey: env("A2A_KEY") },
  });
  const answer = await client.sendMessage({
    message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "Summarise the Q3 report" }] },
  });
  if ("task" in answer) {
    console.log(`task ${answer.task.id}: ${answer.task.status.state}`);
    for (const part of answer.task.artifacts?.[0]?.parts ?? []) if ("text" in part) console.log(part.text);
  } else if ("message" in answer) {
    console.log("reply:", answer.message.parts);
  }
} catch (error) {
  if (!(error instanceof A2AError)) throw error;
  console.error(`refused: ${error.reason} (${error.code}, HTTP ${error.httpStatus}): ${error.message}`);
  process.exitCode = 1;
}

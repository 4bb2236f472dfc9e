// Send a message and follow its task as it works: status changes and artifact chunks as they
// happen. A dropped connection is resumed where it broke (Last-Event-ID).
// A2A_NODE=http://127.0.0.1:8001/.well-known/agents/writer/agent-card.json A2A_PEER=synthorg-a \
//   A2A_KEY=... node dist/examples/stream.js
import { A2AClient, A2AError } from "synthorg-a2a-client";

const env = (name: string): string => process.env[name] ?? `(set ${name})`;

const client = await A2AClient.connect(env("A2A_NODE"), {
  credentials: { PeerName: env("A2A_PEER"), ApiKey: env("A2A_KEY") },
  stream: { onResume: ({ lastEventId }) => console.log(`(connection lost: resuming after event ${lastEventId})`) },
});
const stream = client.streamMessage({
  message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "Write me a haiku" }] },
});
try {
  for await (const event of stream) {
    if ("task" in event) console.log(`task ${event.task.id}: ${event.task.status.state}`);
    if ("statusUpdate" in event) console.log(`status: ${event.statusUpdate.status.state}`);
    if ("artifactUpdate" in event) {
      for (const part of event.artifactUpdate.artifact.parts) if ("text" in part) console.log(`chunk: ${part.text}`);
    }
  }
} catch (error) {
  if (!(error instanceof A2AError)) throw error;
  console.error(`refused: ${error.reason} (${error.code}, HTTP ${error.httpStatus})`);
  process.exitCode = 1;
}

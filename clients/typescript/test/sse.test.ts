// The SSE reader on bodies cut at every byte, with each line ending the standard allows.

import assert from "node:assert/strict";
import { test } from "node:test";
import { readEvents, type SseEvent } from "../src/sse.js";

function body(text: string, cuts: number[]): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    chunks.push(bytes.slice(start, cut));
    start = cut;
  }
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

async function read(text: string, cuts: number[] = []): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of readEvents(body(text, cuts))) events.push(event);
  return events;
}

const STREAM = ": keep-alive\n\nid: 1025\ndata: {\"a\":1}\n\nevent: note\ndata: line one\ndata: line two\n\ndata: no id here\n\nid: 2049\ndata:tight\n\ndata: never closed";
const EXPECTED: SseEvent[] = [
  { id: "1025", event: "message", data: '{"a":1}' },
  { id: "1025", event: "note", data: "line one\nline two" },
  { id: "1025", event: "message", data: "no id here" },
  { id: "2049", event: "message", data: "tight" },
];

test("events, ids, comments and multi-line data, whatever the line endings", async () => {
  for (const ending of ["\n", "\r\n", "\r"]) {
    assert.deepEqual(await read(STREAM.replaceAll("\n", ending)), EXPECTED, JSON.stringify(ending));
  }
});

test("a body cut anywhere reads the same", async () => {
  for (const ending of ["\n", "\r\n"]) {
    const text = STREAM.replaceAll("\n", ending);
    for (let cut = 1; cut < text.length; cut++) {
      assert.deepEqual(await read(text, [cut]), EXPECTED, `${JSON.stringify(ending)} cut at ${cut}`);
    }
  }
});

test("a multi-byte character split between chunks survives", async () => {
  const text = "data: é✓\n\n";
  const bytes = new TextEncoder().encode(text).length;
  for (let cut = 1; cut < bytes; cut++) assert.deepEqual((await read(text, [cut]))[0]?.data, "é✓");
});

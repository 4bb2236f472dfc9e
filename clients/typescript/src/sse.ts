// Server-Sent Events, read from a fetch body as the HTML standard's event stream parser does:
// lines end in LF, CR or CRLF; `data` lines join with LF; `id` sets the last event id, which
// stays until another `id` changes it; a blank line dispatches; comments (`:`) are skipped.

/** One dispatched event. */
export interface SseEvent {
  /** The last event id when the event was dispatched (the SSE `id`), if any was sent. */
  id: string | undefined;
  event: string;
  data: string;
}

/** The events of a `text/event-stream` body, in order, until it ends. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder("utf-8");
  let buffer = "";
  let lastId: string | undefined;
  let data: string[] = [];
  let event = "";
  let sawCr = false;
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const ch = buffer[i];
        if (ch !== "\n" && ch !== "\r") continue;
        if (ch === "\n" && sawCr && i === start) {
          // the LF of a CRLF whose CR ended the previous line
          sawCr = false;
          start = i + 1;
          continue;
        }
        sawCr = ch === "\r";
        const line = buffer.slice(start, i);
        start = i + 1;
        if (line === "") {
          if (data.length > 0) yield { id: lastId, event: event || "message", data: data.join("\n") };
          data = [];
          event = "";
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
        else if (field === "id" && !value.includes("\0")) lastId = value;
      }
      buffer = buffer.slice(start);
      if (done) return; // an event not closed by a blank line is not dispatched
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}

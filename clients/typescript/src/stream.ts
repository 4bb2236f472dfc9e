// A task's stream as an async iterator that survives a dropped connection: the client keeps
// the SSE id of the last event it yielded and, when the connection fails mid-stream, follows
// the task again with Last-Event-ID, so the node replays exactly the events after it (every
// event is in the task's durable log). A refusal by the node is never resumed: it is thrown.

import { A2AAuthError, A2AError, A2AHttpError, A2AProtocolError } from "./errors.js";
import type { StreamedResult } from "./transport.js";

export interface StreamOptions {
  /** Resumes after dropped connections, in all (default 5; 0 never resumes). */
  maxResumes?: number;
  /** The wait before the second and later resumes, doubling each time (default 250 ms; the
   * first resume is at once). */
  resumeDelayMs?: number;
  /** Told before each resume. */
  onResume?: (resume: { taskId: string; lastEventId: string | undefined; attempt: number; cause: unknown }) => void;
  signal?: AbortSignal;
}

type Opener = (lastEventId: string | undefined) => Promise<AsyncIterable<StreamedResult>>;

/** Whether an error is the connection failing, as opposed to an answer or the caller's abort. */
function dropped(error: unknown): boolean {
  if (error instanceof A2AError || error instanceof A2AHttpError) return false;
  if (error instanceof A2AProtocolError || error instanceof A2AAuthError) return false;
  return !(error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError"));
}

/** The task an event belongs to, in either dialect. */
function taskIdOf(result: unknown): string | undefined {
  if (typeof result !== "object" || result === null) return undefined;
  const r = result as Record<string, unknown>;
  const wrapped = (r.task ?? r.statusUpdate ?? r.artifactUpdate ?? r.message) as Record<string, unknown> | undefined;
  const inner = wrapped ?? r;
  if (typeof inner.taskId === "string") return inner.taskId;
  const isTask = r.task !== undefined || r.kind === "task";
  return isTask && typeof inner.id === "string" ? inner.id : undefined;
}

/**
 * The events of one stream, in order, each once. Iterate it once (`for await`); leaving the
 * loop early closes the connection.
 */
export class TaskStream<R> implements AsyncIterable<R> {
  /** The SSE id of the last event yielded: give it to `subscribe` to go on from there later. */
  lastEventId: string | undefined;
  /** The task the stream follows, once an event named it. */
  taskId: string | undefined;
  /** How many times the stream was resumed. */
  resumes = 0;

  constructor(
    private readonly first: Opener,
    private readonly follow: (taskId: string) => Opener,
    private readonly options: StreamOptions = {},
    taskId?: string,
    lastEventId?: string,
  ) {
    this.taskId = taskId;
    this.lastEventId = lastEventId;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<R> {
    const maxResumes = this.options.maxResumes ?? 5;
    const delay = this.options.resumeDelayMs ?? 250;
    let open: Opener = this.first;
    for (;;) {
      try {
        for await (const { id, result } of await open(this.lastEventId)) {
          if (id !== undefined) this.lastEventId = id;
          this.taskId ??= taskIdOf(result);
          yield result as R;
        }
        return;
      } catch (error) {
        const taskId = this.taskId;
        if (!dropped(error) || taskId === undefined || this.resumes >= maxResumes || this.options.signal?.aborted) {
          throw error;
        }
        this.resumes++;
        this.options.onResume?.({ taskId, lastEventId: this.lastEventId, attempt: this.resumes, cause: error });
        if (this.resumes > 1) await new Promise((done) => setTimeout(done, delay * 2 ** (this.resumes - 2)));
        open = this.follow(taskId);
      }
    }
  }
}

import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
/** Whatever can run clean-up after a test (node:test's TestContext, or a bench's own list). */
type Cleanup = { after: (fn: () => unknown) => void };

/** A chat completion request as the fake received it. */
export interface SeenRequest {
  model: string;
  messages: { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
  stream?: boolean;
  max_tokens?: number;
  tools?: { type: string; function: { name: string; parameters: unknown } }[];
  stream_options?: { include_usage?: boolean };
  authorization?: string;
}

/** What the fake answers to one request. */
export interface FakeReply {
  content?: string;
  toolCalls?: { name: string; arguments: unknown }[];
  /** Send usage (default true). */
  usage?: boolean | { prompt: number; completion: number };
  /** Answer this HTTP status with an OpenAI-style error body instead. */
  status?: number;
  /** Wait before answering (ms). */
  delayMs?: number;
  /** Streaming: wait between chunks (ms). */
  chunkDelayMs?: number;
  /** Send the headers and the start of the body (a stream's first chunks), then nothing more: a provider that stalls mid-answer. */
  stall?: boolean;
  /** Headers of an error reply (`status`), such as Retry-After. */
  headers?: Record<string, string>;
  /** Answer 200 with this body instead (a proxy's error page). */
  page?: { contentType: string; body: string };
  /** Answer a streamed request with a plain JSON completion, as a server that ignores `stream` does. */
  ignoreStream?: boolean;
  /** A completion with `choices: []` (streamed: no chunk with a choice, only the usage). */
  noChoice?: boolean;
}

type Responder = (request: SeenRequest, index: number) => FakeReply;

/**
 * An OpenAI-compatible server on loopback, speaking the real wire format of
 * POST /v1/chat/completions: JSON replies with usage and tool calls, and SSE
 * streams (chunked deltas, a usage chunk when asked, `data: [DONE]`).
 */
export async function fakeOpenAi(t: Cleanup, responder: Responder = echo) {
  const seen: SeenRequest[] = [];
  let respond = responder;
  const closed: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      const request = { ...(JSON.parse(raw) as SeenRequest), authorization: req.headers.authorization };
      seen.push(request);
      const reply = respond(request, seen.length - 1);
      if (reply.delayMs) await sleep(reply.delayMs);
      if (reply.status) {
        res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
        res.end(JSON.stringify({ error: { message: `fake error ${reply.status}`, type: 'server_error', code: null } }));
        return;
      }
      if (reply.page) {
        res.writeHead(200, { 'content-type': reply.page.contentType });
        res.end(reply.page.body);
        return;
      }
      const content = reply.content ?? '';
      const promptTokens = typeof reply.usage === 'object' ? reply.usage.prompt : promptOf(request);
      const completionTokens = typeof reply.usage === 'object' ? reply.usage.completion : Math.max(1, Math.ceil(content.length / 4));
      const usage = reply.usage === false ? undefined : { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
      const id = `chatcmpl-${seen.length}`;
      const created = Math.floor(Date.now() / 1000);
      if (!request.stream && reply.stall) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(`{"id":"${id}","object":"chat.completion","created":${created},`);
        return;
      }
      if (!request.stream || reply.ignoreStream) {
        const toolCalls = reply.toolCalls?.map((c, i) => ({ id: `call_${seen.length}_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model: request.model,
            choices: reply.noChoice
              ? []
              : [
                  {
                    index: 0,
                    message: { role: 'assistant', content: toolCalls?.length ? null : content, ...(toolCalls?.length ? { tool_calls: toolCalls } : {}) },
                    finish_reason: toolCalls?.length ? 'tool_calls' : 'stop',
                  },
                ],
            ...(usage ? { usage } : {}),
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.on('close', () => {
        if (!res.writableFinished) closed.push(id);
      });
      const chunk = (delta: object, finish: string | null = null, extra: object = {}) =>
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: request.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
      if (!reply.noChoice) res.write(chunk({ role: 'assistant', content: '' }));
      for (const piece of reply.noChoice ? [] : (content.match(/\S+\s*/g) ?? [])) {
        if (res.destroyed) return;
        if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
        if (res.destroyed) return;
        res.write(chunk({ content: piece }));
        if (reply.stall) return;
      }
      if (!reply.noChoice) res.write(chunk({}, 'stop'));
      if (usage && request.stream_options?.include_usage) {
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: request.model, choices: [], usage })}\n\n`);
      }
      res.end('data: [DONE]\n\n');
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // A stalled answer never ends: its connection is cut, or close would wait for it.
  t.after(() => new Promise<void>((resolve) => {
    for (const socket of sockets) socket.destroy();
    server.close(() => resolve());
  }));
  server.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    seen,
    /** Streams the server saw closed by the client before they ended. */
    closed,
    respond(next: Responder) {
      respond = next;
    },
  };
}

/** Echoes the last user message. */
export function echo(request: SeenRequest): FakeReply {
  const last = [...request.messages].reverse().find((m) => m.role === 'user');
  return { content: `You said: ${last?.content ?? ''}` };
}

function promptOf(request: SeenRequest): number {
  return Math.max(1, Math.ceil(request.messages.reduce((n, m) => n + (m.content?.length ?? 0), 0) / 4));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A SearXNG-style search on loopback: GET /search?q=…&format=json. */
export async function fakeSearch(t: Cleanup, results: (query: string) => { url: string; title: string; content: string }[]) {
  const queries: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/search' || url.searchParams.get('format') !== 'json') {
      res.writeHead(400).end('format=json required');
      return;
    }
    const q = url.searchParams.get('q') ?? '';
    queries.push(q);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ query: q, number_of_results: 0, results: results(q) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.unref();
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, queries };
}

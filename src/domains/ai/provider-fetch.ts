import http from 'node:http';
import https from 'node:https';
import { Readable, type Transform } from 'node:stream';
import zlib from 'node:zlib';

/** What the official SDK calls its `fetch` option with (the part used here). */
type FetchInit = { method?: string; headers?: ConstructorParameters<typeof Headers>[0]; body?: unknown; signal?: AbortSignal | null };

const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const decoders: Record<string, () => Transform> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/**
 * The `fetch` the engine gives the official `openai` SDK (its documented
 * `fetch` option): the request over node:http(s) with a keep-alive agent,
 * answered as a WHATWG Response, as fetch answers. Node 20's built-in fetch
 * (undici) spent about 0.35 ms of CPU a call on its request, header and
 * stream objects; this spends about half (bench/README.md), on every model
 * call: a chat, each bulk row, each research step. The provider is the
 * operator's (AI_BASE_URL), so no SSRF guard applies, as before.
 *
 * What fetch does and this keeps: the caller's signal aborts the request and
 * the body being read (an AbortError, which the SDK reads as an abort or a
 * time-out); a gzip, deflate or br body is decoded; a connection failure is
 * an Error the SDK turns into APIConnectionError. What it leaves to fetch
 * itself: a redirect (fetch sends the request again and follows it), and a
 * body that is not text or bytes (a stream, a form), which a chat completion
 * never sends.
 */
export function providerFetch(input: string | URL | Request, init: FetchInit = {}): Promise<Response> {
  const body = init.body;
  const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : null;
  const agent = url && agents[url.protocol as keyof typeof agents];
  if (!url || !agent || (body != null && typeof body !== 'string' && !(body instanceof Uint8Array))) return fetch(input, init as RequestInit);
  const payload = typeof body === 'string' ? Buffer.from(body) : body ?? undefined;
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => (headers[name] = value));
  if (payload) headers['content-length'] = String(payload.byteLength);
  const signal = init.signal ?? undefined;
  // As fetch: an abort rejects with the signal's reason (an AbortError unless the caller gave another).
  const aborted = () => (signal?.reason as Error | undefined) ?? new DOMException('This operation was aborted', 'AbortError');
  if (signal?.aborted) return Promise.reject(aborted());
  const request = (url.protocol === 'https:' ? https.request : http.request)(url, { agent, method: init.method ?? 'GET', headers });
  return new Promise<Response>((resolve, reject) => {
    // Until the answer starts, an abort fails the request; after, the body being read.
    let onAbort = (): void => void request.destroy(aborted());
    const stop = () => signal?.removeEventListener('abort', abort);
    const abort = () => onAbort();
    signal?.addEventListener('abort', abort, { once: true });
    request.on('error', (error) => {
      stop();
      reject(error);
    });
    request.once('response', (response) => {
      const status = response.statusCode ?? 502;
      const location = response.headers.location;
      if (REDIRECTS.has(status) && location) {
        // fetch asks again and follows it by the spec's rules (a 303, or a POST moved by 301 or 302, becomes a GET).
        stop();
        response.resume();
        resolve(fetch(input, init as RequestInit));
        return;
      }
      const answered = new Headers();
      const raw = response.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) answered.append(raw[i]!, raw[i + 1]!);
      const decode = decoders[(response.headers['content-encoding'] ?? '').trim().toLowerCase()];
      let stream: Readable = response;
      if (decode) {
        const decoder = decode();
        // A failed read (a broken body) reaches the decoded stream's reader too.
        response.once('error', (error) => decoder.destroy(error));
        stream = response.pipe(decoder);
      }
      onAbort = () => {
        stream.destroy(aborted());
        request.destroy();
      };
      stream.once('close', stop);
      const nullBody = status === 204 || status === 205 || status === 304 || init.method === 'HEAD';
      if (nullBody) response.resume();
      const answer = new Response(nullBody ? null : (Readable.toWeb(stream) as ReadableStream<Uint8Array>), { status, statusText: response.statusMessage, headers: answered });
      Object.defineProperty(answer, 'url', { value: url.href });
      resolve(answer);
    });
    request.end(payload);
  });
}

import type { FastifyReply, FastifyRequest } from 'fastify';
import { body, member, type RestRoute } from '../route';
import { nullable, PROVIDER_TIMEOUT } from '../schemas';
import { MODEL_NAME_MAX } from '../../src/domains/catalog';
import { errorBody } from '../../src/host/problem';
import { PROBLEM_DETAILS_SINCE } from '../../src/version';
import { AppError, isAppError } from '../../src/errors/catalog';
import { CHAT_MESSAGE_MAX, chatAgents, SESSION_ID_MAX, STUDIO_TEXT_MAX, type ChatReply } from '../../src/domains/ai';

const KEY = 'Takes only an AI-modules key (Authorization: Bearer sk_live_svc_…); any other credential is 401.';
const COST =
  "Cost: tokens ÷ 1,000 × the model's credit cost from the catalog (GET /v1/models), rounded up. The largest possible call " +
  '(the prompt and AI_MAX_OUTPUT_TOKENS) is held before it runs and what it used is spent; a failed call spends nothing. ' +
  'Out of credits is 402 CREDIT_EXHAUSTED, a spent currency budget 402 BUDGET_EXHAUSTED.';
const NO_PROVIDER = 'Without AI_BASE_URL: 503 ai_provider_not_configured, spending nothing.';

interface ChatBody {
  message: string;
  agent: string;
  session_id: string;
  web_search?: boolean | null;
  model?: string | null;
  stream?: boolean | null;
}

const chatReply = (reply: ChatReply) => ({
  response: reply.response,
  tokens: reply.tokens,
  session_id: reply.sessionId,
  credits_used: reply.creditsUsed,
  model: reply.model,
  ...(reply.sources ? { sources: reply.sources } : {}),
});

/**
 * POST /chat: JSON, or with "stream": true Server-Sent Events (delta
 * events, then done or error). The stream starts only once the request is
 * checked and its credits held, so a refusal (402 included) is still a
 * problem document; a client that goes away aborts the provider call, and
 * what it used is spent.
 */
async function chat(request: FastifyRequest, reply: FastifyReply) {
  const b = request.body as ChatBody;
  const input = { message: b.message, agent: b.agent, sessionId: b.session_id, webSearch: b.web_search ?? false, model: b.model ?? null };
  const service = request.server.domains.ai.chat;
  if (!b.stream) return reply.code(200).send(chatReply(await service.chat(request.principal, input, request.meta)));

  const abort = new AbortController();
  const raw = reply.raw;
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    reply.hijack();
    raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      // No proxy may hold deltas back.
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    });
  };
  const send = (event: string, data: unknown) => raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  raw.on('close', () => {
    if (!raw.writableFinished) abort.abort();
  });
  // A stopping server does not wait for the reply: the call is aborted (what it used is spent) and the stream ends with an error event.
  const stopping = request.server.stopping;
  const stop = () => abort.abort();
  stopping.addEventListener('abort', stop, { once: true });
  try {
    const done = await service.chat(request.principal, input, request.meta, {
      onStart: start,
      onDelta: (text) => send('delta', { text }),
      signal: abort.signal,
    });
    const { response: _text, ...rest } = chatReply(done);
    send('done', rest);
  } catch (error) {
    // Before the first byte: answered whole, as without "stream".
    if (!started) throw error;
    if (abort.signal.aborted) {
      if (stopping.aborted && !raw.destroyed) send('error', errorBody(new AppError('server_busy', 'The server is stopping; ask again'), request, request.server.config.docsUrl).body);
      return;
    }
    const problem = isAppError(error) ? error : new AppError('internal_error', 'The reply failed');
    if (problem.code === 'internal_error') request.log.error({ err: error }, 'chat stream failed');
    // The body a refusal before the stream would have had: the legacy one for a client pinned before RFC 9457.
    send('error', errorBody(problem, request, request.server.config.docsUrl).body);
  } finally {
    stopping.removeEventListener('abort', stop);
    if (started) raw.end();
  }
}

/** ChatInput's members as REST names them, and stream. An optional member also takes null, which means what leaving it out does, as in every derived body (and ChatInput over GraphQL). */
const chatRequest = {
  type: 'object',
  additionalProperties: false,
  required: ['message', 'agent', 'session_id'],
  properties: {
    message: { type: 'string', minLength: 1, maxLength: CHAT_MESSAGE_MAX },
    agent: { type: 'string', enum: [...chatAgents] },
    session_id: { type: 'string', minLength: 1, maxLength: SESSION_ID_MAX, description: "Reusing it keeps the conversation (per user)" },
    web_search: nullable('boolean', { default: false }),
    model: nullable('string', { minLength: 1, maxLength: MODEL_NAME_MAX, description: 'A catalog model id or a model family (gpt, claude, mistral, llama)' }),
    stream: nullable('boolean', { default: false, description: 'Answer as Server-Sent Events: delta, then done or error' }),
  },
};

const chatResponse = {
  type: 'object',
  additionalProperties: false,
  required: ['response', 'tokens', 'session_id', 'credits_used', 'model'],
  properties: {
    response: { type: 'string' },
    tokens: { type: 'integer' },
    session_id: { type: 'string' },
    credits_used: { type: 'integer' },
    model: { type: 'string' },
    sources: {
      type: 'array',
      items: { type: 'object', additionalProperties: false, required: ['title', 'url', 'snippet'], properties: { title: { type: 'string' }, url: { type: 'string' }, snippet: { type: 'string' } } },
    },
  },
};

/** The key-authenticated AI modules (ai-modules-api.md): each path also a GraphQL field of the modules subgraph. */
export const moduleRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/apikeys/verify',
    operationId: 'verifyApiKey',
    summary: 'Verify an API key',
    description: `The presented key: valid, username (its user's email), plan, scopes and auth_method. ${KEY}`,
    tag: 'AI modules',
    credential: 'module_key',
    status: 200,
    field: 'apiKeyVerification',
  },
  {
    method: 'GET',
    path: '/usage',
    operationId: 'getModuleUsage',
    summary: 'Usage',
    description:
      "The key's user and plan, the company's credits available now (credits_remaining), the plan's monthly credits and the " +
      `days left of a trial (null without one). Free. ${KEY}`,
    tag: 'AI modules',
    credential: 'module_key',
    status: 200,
    field: 'moduleUsage',
  },
  {
    method: 'POST',
    path: '/chat',
    operationId: 'chat',
    summary: 'Chat',
    description:
      `A reply from a persona (agent: ${chatAgents.join(', ')}), with the session's history, trimmed to the model's context. ` +
      'web_search puts search results into the context and answers them as sources (503 web_search_not_configured without ' +
      'WEB_SEARCH_URL). With "stream": true the answer is Server-Sent Events: delta {text}, then done {tokens, credits_used, ' +
      `session_id, model} or error (a problem document; {detail, code} for a client pinned before ${PROBLEM_DETAILS_SINCE}, as its error answers are), and the stream closes. A stream is bounded by the provider's silence, not ` +
      'its length: no answer started, or no next piece of it, within AI_TIMEOUT_SECONDS ends it with error ai_provider_timeout. ' +
      `Scope chat. ${COST} ${NO_PROVIDER} ${KEY}`,
    tag: 'AI modules',
    credential: 'module_key',
    auth: 'required',
    status: 200,
    problems: { 402: 'CREDIT_EXHAUSTED or BUDGET_EXHAUSTED', 403: 'insufficient_scope: the key lacks the chat scope', 404: 'model_not_found', 422: 'model_blocked, or a bad field', 502: 'ai_provider_error', 503: 'ai_provider_not_configured or web_search_not_configured', 504: PROVIDER_TIMEOUT },
    request: { body: chatRequest },
    response: chatResponse,
    content: {
      'application/json': chatResponse,
      'text/event-stream': {
        type: 'string',
        description:
          'With "stream": true: Server-Sent Events, delta {text} events, then done {tokens, credits_used, session_id, model} or error ' +
          `(a problem document, or a LegacyError for a client pinned before ${PROBLEM_DETAILS_SINCE})`,
      },
    },
    raw: chat,
  },
  {
    method: 'POST',
    path: '/studio/process',
    operationId: 'studioProcess',
    summary: 'Translate or rewrite a text',
    description:
      `text (up to ${STUDIO_TEXT_MAX} characters); source_lang (ISO 639-1, detected offline when absent); target_lang (default ` +
      'en); mode: translate (default), grammar, formal or informal. Rewrites keep the source language. Unknown language ' +
      `codes or modes are 422. Scope translate. ${COST} ${NO_PROVIDER} ${KEY}`,
    tag: 'AI modules',
    credential: 'module_key',
    status: 200,
    problems: { 402: 'CREDIT_EXHAUSTED or BUDGET_EXHAUSTED', 403: 'insufficient_scope: the key lacks the translate scope', 404: 'model_not_found', 422: 'model_blocked, or a bad field', 502: 'ai_provider_error', 503: 'ai_provider_not_configured', 504: PROVIDER_TIMEOUT },
    field: 'studioProcess',
    args: { input: body() },
  },
  {
    method: 'POST',
    path: '/agent/run',
    operationId: 'agentRun',
    summary: 'Run an agent',
    description:
      'task, and tools: any of web_search, calculator and code_runner (none when omitted). The model is offered only those, ' +
      'as function calls, in a loop of at most AGENT_MAX_STEPS (6) tool calls; the answer is output and steps [{tool, input, ' +
      'output}]. calculator parses arithmetic (never eval); code_runner runs JavaScript in a QuickJS sandbox (no host access, ' +
      `2 s, 32 MB, 10,000 characters of output); web_search asks WEB_SEARCH_URL. Scope agent. ${COST} Every model call of the ` +
      `loop counts. ${NO_PROVIDER} ${KEY}`,
    tag: 'AI modules',
    credential: 'module_key',
    status: 200,
    problems: { 402: 'CREDIT_EXHAUSTED or BUDGET_EXHAUSTED', 403: 'insufficient_scope: the key lacks the agent scope', 404: 'model_not_found', 422: 'model_blocked, or a bad field', 502: 'ai_provider_error', 503: 'ai_provider_not_configured or web_search_not_configured', 504: PROVIDER_TIMEOUT },
    field: 'agentRun',
    args: { input: body() },
  },
  {
    method: 'POST',
    path: '/studio/detect',
    operationId: 'detectLanguage',
    summary: 'Detect the language of a text',
    description: `Body: text (up to ${STUDIO_TEXT_MAX} characters). Detected offline: free, and works without a provider. Scope translate. ${KEY}`,
    tag: 'AI modules',
    extension: true,
    credential: 'module_key',
    status: 200,
    problems: { 403: 'insufficient_scope: the key lacks the translate scope' },
    field: 'detectLanguage',
    args: { text: member('text') },
  },
];

import OpenAI from 'openai';
import { providerFetch } from './provider-fetch';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { AppError } from '../../errors/catalog';
import type { ModelView } from '../catalog';
import type { AiConfig } from './config';

export type Message = ChatCompletionMessageParam;
export type Tool = ChatCompletionTool;

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** True when the provider sent no usage and the counts are estimated from the text. */
  estimated: boolean;
}

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them (JSON text). */
  arguments: string;
}

export interface Completion {
  content: string;
  toolCalls: ToolCall[];
  usage: TokenUsage;
}

export interface CompletionRequest {
  model: ModelView;
  messages: Message[];
  tools?: Tool[];
  maxTokens: number;
  signal?: AbortSignal;
}

/** A provider call ended by its caller (the client went away): what it had used until then. */
export class ProviderCallAborted extends Error {
  constructor(readonly usage: TokenUsage) {
    super('The provider call was aborted');
  }

  /** What ModuleCredits.spend commits instead of releasing the hold. */
  get usedTokens(): number {
    return this.usage.totalTokens;
  }
}

/**
 * Tokens of a text when the provider does not count them: about four ASCII
 * characters a token (English), and a token for every three UTF-8 bytes of
 * other text (a CJK character, or one and a half accented or Cyrillic
 * letters), which tokenizers trained mostly on English split finer.
 */
export function estimateTokens(text: string): number {
  let ascii = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 0x80) ascii++;
  if (ascii === text.length) return Math.ceil(ascii / 4);
  return Math.ceil(ascii / 4 + (Buffer.byteLength(text, 'utf8') - ascii) / 3);
}

/** The longest start of `text` whose `estimateTokens` is at most `tokens` (cut between characters, never inside a surrogate pair). */
export function clipToTokens(text: string, tokens: number): string {
  if (estimateTokens(text) <= tokens) return text;
  // The estimate in twelfths of a token: 3 per ASCII character, 4 per UTF-8 byte of anything else.
  const budget = tokens * 12;
  let cost = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.codePointAt(i)!;
    const wide = code > 0xffff;
    cost += code < 0x80 ? 3 : 4 * (code < 0x800 ? 2 : wide ? 4 : 3);
    if (cost > budget) return text.slice(0, i);
    if (wide) i++;
  }
  return text;
}

/**
 * The tokens a call's credit hold covers: its prompt (its messages, or their
 * estimated tokens when the caller has counted them) at twice the estimate
 * (a provider's tokenizer counts code, digits and other scripts higher than
 * the estimate) plus the most it may write. A call is charged what the
 * provider reports, but never more than its hold, so the hold errs high;
 * what it held beyond the use goes back at once.
 */
export function holdTokens(prompt: readonly Message[] | number, maxTokens: number): number {
  return 2 * (typeof prompt === 'number' ? prompt : estimatePromptTokens(prompt)) + maxTokens;
}

/** Tokens of a prompt: its texts plus a few per message for the chat format. */
export function estimatePromptTokens(messages: readonly Message[]): number {
  let tokens = 3;
  for (const m of messages) {
    tokens += 4;
    if (typeof m.content === 'string') tokens += estimateTokens(m.content);
    if ('tool_calls' in m && m.tool_calls) for (const c of m.tool_calls) if (c.type === 'function') tokens += estimateTokens(c.function.name + c.function.arguments);
  }
  return tokens;
}

/** The abort reason of the engine's own deadline, to tell it from the caller's abort. */
class DeadlinePassed extends Error {
  constructor() {
    super('AI_TIMEOUT_SECONDS passed');
  }
}

/**
 * AI_TIMEOUT_SECONDS as the engine keeps it. The SDK's own timeout ends only
 * the wait for a response's headers, once per attempt: a provider that sends
 * its headers and then stalls would hang until undici's body timeout
 * (300 s), and its retries would multiply the wait. One timer over the whole
 * call (its retries and the reading of its body included) ends it instead;
 * a stream restarts the timer at each chunk.
 */
class Deadline {
  private readonly own = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly unlink: () => void = () => undefined;
  /**
   * The caller's signal and the deadline together: what the SDK is given, a
   * signal of the call's own. Not `AbortSignal.any`: the SDK never removes the
   * listener it adds, and Node keeps a combined signal that has a listener
   * alive until it aborts, so every call that ended normally stayed in memory
   * (~2 KB each: a 100,000-row bulk job grew its process by ~200 MB).
   */
  readonly signal: AbortSignal = this.own.signal;

  constructor(ms: number, caller?: AbortSignal) {
    this.timer = setTimeout(() => this.own.abort(new DeadlinePassed()), ms);
    if (caller?.aborted) this.own.abort(caller.reason);
    else if (caller) {
      const follow = () => this.own.abort(caller.reason);
      caller.addEventListener('abort', follow, { once: true });
      this.unlink = () => caller.removeEventListener('abort', follow);
    }
  }

  /** Whether the deadline, not the caller, ended the call (the first abort gives the call's signal its reason). */
  get passed(): boolean {
    return this.signal.reason instanceof DeadlinePassed;
  }

  /** Starts the time over: a stream's chunk arrived. */
  restart(): void {
    this.timer.refresh();
  }

  end(): void {
    clearTimeout(this.timer);
    this.unlink();
  }

  /**
   * `work`, or its abort as soon as the signal fires: the SDK notices an
   * abort only at the start of an attempt or while reading, not during its
   * backoff between retries (up to a minute with a provider's Retry-After).
   */
  race<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const aborted = () => reject(this.signal.reason);
      if (this.signal.aborted) aborted();
      else this.signal.addEventListener('abort', aborted, { once: true });
      // The work settles later too (as an abort); handled here, so it is never an unhandled rejection.
      work.then(resolve, reject).finally(() => this.signal.removeEventListener('abort', aborted));
    });
  }
}

/** Whether a Content-Type names Server-Sent Events. */
function isEventStream(contentType: string): boolean {
  return /^\s*text\/event-stream\s*(;|$)/i.test(contentType);
}

/**
 * The one way Atrium talks to a model: the official `openai` SDK against any
 * OpenAI-compatible server (AI_BASE_URL). The SDK retries 429, 5xx and
 * connection errors with backoff (AI_MAX_RETRIES), within the engine's own
 * deadline (AI_TIMEOUT_SECONDS): a call, its retries and the reading of its
 * answer included, or for a stream each wait for the next chunk. What still
 * fails becomes 502 ai_provider_error or 504 ai_provider_timeout.
 */
export class AiEngine {
  private readonly client: OpenAI | null;

  constructor(private readonly config: AiConfig) {
    this.client = config.baseUrl
      ? new OpenAI({
          baseURL: config.baseUrl,
          // Local servers (Ollama, vLLM, llama.cpp) take any key; the SDK insists on one.
          apiKey: config.apiKey ?? 'none',
          timeout: config.timeoutMs,
          maxRetries: config.maxRetries,
          // Half the CPU of Node's built-in fetch a call (see the function).
          fetch: providerFetch,
        })
      : null;
  }

  get configured(): boolean {
    return this.client !== null;
  }

  /** 503 ai_provider_not_configured unless a provider is set: checked before anything is spent. */
  requireConfigured(): OpenAI {
    if (!this.client) {
      throw new AppError(
        'ai_provider_not_configured',
        'No AI provider is configured: set AI_BASE_URL to an OpenAI-compatible server (for example http://127.0.0.1:11434/v1 for Ollama), ' +
          'with AI_API_KEY if it needs one, and restart',
      );
    }
    return this.client;
  }

  /** The provider's name for a catalog model (AI_MODEL_MAP), or the id itself. */
  providerModel(model: ModelView): string {
    return this.config.modelMap.get(model.id) ?? model.id;
  }

  /** One reply, within AI_TIMEOUT_SECONDS from the request to the end of its body, retries included. */
  async complete(request: CompletionRequest): Promise<Completion> {
    const client = this.requireConfigured();
    const deadline = new Deadline(this.config.timeoutMs, request.signal);
    try {
      const response = await deadline.race(
        client.chat.completions.create(
          {
            model: this.providerModel(request.model),
            messages: request.messages,
            max_tokens: request.maxTokens,
            ...(request.tools?.length ? { tools: request.tools } : {}),
          },
          { signal: deadline.signal },
        ),
      );
      const message = replyOf(response);
      const content = message.content ?? '';
      const toolCalls: ToolCall[] = [];
      for (const call of message.tool_calls ?? []) {
        if (call.type === 'function') toolCalls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments });
      }
      return { content, toolCalls, usage: usageOf(response.usage, request.messages, content + toolCalls.map((c) => c.name + c.arguments).join('')) };
    } catch (error) {
      if (deadline.passed) throw this.timedOut(error, 'did not finish its answer');
      if (error instanceof OpenAI.APIUserAbortError || request.signal?.aborted) throw new ProviderCallAborted(usageOf(undefined, request.messages, ''));
      throw providerError(error);
    } finally {
      deadline.end();
    }
  }

  /**
   * Streams a reply, handing each piece of text to `onDelta`. Asks for the
   * provider's usage at the end of the stream; a client that goes away
   * (`signal`) aborts the call and gets ProviderCallAborted with what was used.
   * AI_TIMEOUT_SECONDS bounds each wait: for the answer to start (retries
   * included), then for each next chunk, so a long reply still streams while
   * a provider that falls silent ends in 504. An answer that is no event
   * stream, or holds no choice at all, is 502: nothing of it is a reply.
   */
  async stream(request: CompletionRequest, onDelta: (text: string) => void): Promise<Completion> {
    const client = this.requireConfigured();
    const deadline = new Deadline(this.config.timeoutMs, request.signal);
    let content = '';
    let usage: OpenAI.CompletionUsage | undefined;
    let answered = false;
    try {
      const { data: stream, response } = await deadline.race(
        client.chat.completions
          .create(
            {
              model: this.providerModel(request.model),
              messages: request.messages,
              max_tokens: request.maxTokens,
              stream: true,
              stream_options: { include_usage: true },
            },
            { signal: deadline.signal },
          )
          .withResponse(),
      );
      const type = response.headers.get('content-type');
      // No type named: the chunks show whether it was a stream.
      if (type !== null && !isEventStream(type)) {
        stream.controller.abort();
        // A server that ignored "stream" (a JSON completion) or a proxy's page: the SDK would read no event from it, and end as if the reply were empty.
        throw new AppError('ai_provider_error', `The AI provider answered a streamed call with ${type.slice(0, 100)}, not an event stream`);
      }
      const chunks = stream[Symbol.asyncIterator]();
      for (;;) {
        deadline.restart();
        const next = await deadline.race(chunks.next());
        if (next.done) break;
        const chunk = next.value;
        if (chunk.usage) usage = chunk.usage;
        if (chunk.choices?.length) answered = true;
        const delta = chunk.choices?.[0]?.delta?.content;
        if (delta) {
          content += delta;
          onDelta(delta);
        }
      }
      if (request.signal?.aborted) throw new ProviderCallAborted(usageOf(usage, request.messages, content));
      if (!answered) throw new AppError('ai_provider_error', 'The AI provider\'s stream held no reply (no choice)');
      return { content, toolCalls: [], usage: usageOf(usage, request.messages, content) };
    } catch (error) {
      if (error instanceof ProviderCallAborted) throw error;
      if (deadline.passed) throw this.timedOut(error, answered ? 'fell silent in its answer' : 'did not start its answer');
      if (error instanceof OpenAI.APIUserAbortError || request.signal?.aborted) throw new ProviderCallAborted(usageOf(usage, request.messages, content));
      throw providerError(error);
    } finally {
      deadline.end();
    }
  }

  private timedOut(cause: unknown, what: string): AppError {
    return new AppError('ai_provider_timeout', `The AI provider ${what} within AI_TIMEOUT_SECONDS (${this.config.timeoutMs / 1000} s)`, { cause });
  }
}

/** The message of a completion's first choice; an answer without one (`choices: []`, or no completion at all) is the provider's fault. */
function replyOf(response: OpenAI.ChatCompletion): OpenAI.ChatCompletionMessage {
  const message = (response as Partial<OpenAI.ChatCompletion> | null)?.choices?.[0]?.message;
  if (!message || typeof message !== 'object') throw new AppError('ai_provider_error', 'The AI provider answered without a reply (no choice)');
  return message;
}

/**
 * The most tokens one count of a provider's usage report is believed: no
 * model's context comes near it. A count past it, negative or fractional is
 * a provider's bug; the call is then charged by the estimate, as one without
 * a report is (the ledger would refuse such a count, and the hold caps the
 * charge anyway).
 */
const MAX_REPORTED_TOKENS = 10_000_000;

const believable = (count: unknown): count is number => Number.isInteger(count) && (count as number) >= 0 && (count as number) <= MAX_REPORTED_TOKENS;

function usageOf(usage: OpenAI.CompletionUsage | undefined | null, messages: readonly Message[], output: string): TokenUsage {
  if (usage && believable(usage.prompt_tokens) && believable(usage.completion_tokens)) {
    return {
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      totalTokens: usage.prompt_tokens + usage.completion_tokens,
      estimated: false,
    };
  }
  const promptTokens = estimatePromptTokens(messages);
  const completionTokens = estimateTokens(output);
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, estimated: true };
}

/**
 * Whether work that failed may succeed when run again (a bulk row, a
 * research step): not when the provider refused the request itself (a 4xx
 * other than 408 and 429: a model it lacks, a request it rejects), nor any
 * other 4xx; yes for time-outs, the provider's 5xx and unexpected errors.
 */
export function worthRetrying(error: unknown): boolean {
  if (!(error instanceof AppError)) return true;
  if (error.code === 'ai_provider_error') {
    const status = error.extra.provider_status;
    return typeof status !== 'number' || status >= 500 || status === 408 || status === 429;
  }
  return error.status >= 500;
}

/** What a provider failure is to the caller, after the SDK's retries. */
function providerError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return new AppError('ai_provider_timeout', 'The AI provider did not answer in time', { cause: error });
  }
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    return new AppError('ai_provider_error', `The AI provider answered ${error.status}${error.status === 429 ? ' (rate limited) after retries' : ''}`, {
      cause: error,
      extra: { provider_status: error.status },
    });
  }
  if (error instanceof OpenAI.APIConnectionError) {
    return new AppError('ai_provider_error', 'The AI provider could not be reached', { cause: error });
  }
  return new AppError('ai_provider_error', 'The AI provider sent an answer Atrium could not read', { cause: error });
}

import { uuidv7 } from '../../ids';
import type { ReadStore } from '../../db/read-store';
import { AppError } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { requireModuleCaller, type ModuleCaller } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import type { AlongsideWrite } from '../billing';
import type { CatalogService, ModelView } from '../catalog';
import type { AiConfig } from './config';
import { creditsFor, type ModuleCredits } from './credits';
import { estimatePromptTokens, estimateTokens, holdTokens, type AiEngine, type Message } from './engine';
import type { SearchResult, WebSearch } from './web-search';
import { ChatHistoryCache, type Turn } from './chat-history';

export const chatAgents = ['general', 'legal', 'marketing', 'developer', 'analyst', 'copywriter', 'telecom'] as const;
export type ChatAgent = (typeof chatAgents)[number];

/** The longest message a request may send, in characters. */
export const CHAT_MESSAGE_MAX = 32_000;
export const SESSION_ID_MAX = 128;
/** Turns of history read back at most, newest first, before trimming to the model's context. */
const HISTORY_TURNS_MAX = 200;

export interface ChatInput {
  message: string;
  agent: string;
  sessionId: string;
  webSearch?: boolean | null;
  model?: string | null;
}

export interface ChatSource {
  title: string;
  url: string;
  snippet: string;
}

export interface ChatReply {
  response: string;
  tokens: number;
  sessionId: string;
  creditsUsed: number;
  model: string;
  sources: ChatSource[] | null;
}

export interface ChatStreamHooks {
  /** Called once the credits are held, before the provider call: a refusal before it (402, a failed search) is still the caller's to answer whole. */
  onStart?(): void;
  onDelta(text: string): void;
  /** Aborted when the client goes away: the provider call is aborted and what it used is committed. */
  signal?: AbortSignal;
}

/** The shortest reply a chat leaves room for in the model's context. */
const MIN_REPLY_TOKENS = 64;

/**
 * Chat with a persona (data/personas.json), server-side history per user and
 * session_id, and optional web search in the context. Each call holds
 * credits for its largest possible cost (the prompt and AI_MAX_OUTPUT_TOKENS)
 * and spends what the provider reports used.
 */
export class ChatService {
  private readonly histories = new ChatHistoryCache(HISTORY_TURNS_MAX);

  constructor(
    // History is read and written with prepared statements (the read store; the write in its credits'
    // commit): through the ORM they cost about 6 ms of a chat call's overhead (bench/README.md).
    private readonly reads: ReadStore,
    private readonly config: AiConfig,
    private readonly engine: AiEngine,
    private readonly search: WebSearch,
    private readonly catalog: CatalogService,
    private readonly credits: ModuleCredits,
    private readonly personas: Readonly<Record<ChatAgent, string>>,
  ) {}

  /** Checks the request before anything runs or is spent. */
  prepare(principal: Principal, input: ChatInput): { caller: ModuleCaller; agent: ChatAgent; model: ModelView; messageTokens: number } {
    const caller = requireModuleCaller(principal, 'chat');
    const issues = [];
    if (!input.message.trim()) issues.push({ loc: ['body', 'message'], msg: 'must not be empty', type: 'string_too_short' });
    if (textLength(input.message) > CHAT_MESSAGE_MAX) issues.push({ loc: ['body', 'message'], msg: `at most ${CHAT_MESSAGE_MAX} characters`, type: 'string_too_long' });
    if (!(chatAgents as readonly string[]).includes(input.agent)) issues.push({ loc: ['body', 'agent'], msg: `must be one of ${chatAgents.join(', ')}`, type: 'enum' });
    if (!input.sessionId.trim() || textLength(input.sessionId) > SESSION_ID_MAX || /\p{Cc}/u.test(input.sessionId)) {
      issues.push({ loc: ['body', 'session_id'], msg: `1 to ${SESSION_ID_MAX} characters, no control characters`, type: 'string_length' });
    }
    if (issues.length) throw AppError.validation(issues);
    const model = this.catalog.resolve(input.model ?? this.config.defaultModel);
    // A message the model's context cannot hold with its instructions and a short reply is the caller's to shorten (a provider would answer 400, seen as 502).
    const messageTokens = estimateTokens(input.message);
    const fixed = estimatePromptTokens([{ role: 'system', content: this.personas[input.agent as ChatAgent] }]) + messageTokens + 8;
    if (fixed + MIN_REPLY_TOKENS > model.contextLength) {
      throw AppError.validation(
        [{ loc: ['body', 'message'], msg: `about ${fixed} tokens with the instructions; ${model.id} holds ${model.contextLength} in all, its reply included`, type: 'string_too_long' }],
        `The message is too long for ${model.id}'s context`,
      );
    }
    this.engine.requireConfigured();
    if (input.webSearch) this.search.requireConfigured();
    return { caller, agent: input.agent as ChatAgent, model, messageTokens };
  }

  async chat(principal: Principal, input: ChatInput, meta: RequestMeta, stream?: ChatStreamHooks): Promise<ChatReply> {
    const { caller, agent, model, messageTokens: userTokens } = this.prepare(principal, input);
    const history = this.history(caller, input.sessionId);
    let system = this.personas[agent];
    // Searched before anything is held: a search that fails spends nothing.
    let sources: ChatSource[] | null = null;
    if (input.webSearch) {
      const results = await this.search.search(input.message, stream?.signal);
      sources = results.map((r: SearchResult) => ({ title: r.title, url: r.url, snippet: r.content }));
      system += `\n\nWeb search results for the user's message (cite them as [n] where you use them):\n${results
        .map((r, i) => `[${i + 1}] ${r.title} (${r.url})\n${r.content}`)
        .join('\n\n')}`;
    }
    const messages: Message[] = [{ role: 'system', content: system }];
    const fixed = estimatePromptTokens(messages) + userTokens + 8;
    // The reply gets what the context leaves, up to AI_MAX_OUTPUT_TOKENS; history fits what remains after it.
    const maxTokens = Math.max(MIN_REPLY_TOKENS, Math.min(this.config.maxOutputTokens, model.contextLength - fixed));
    let room = model.contextLength - maxTokens - fixed;
    const kept: Turn[] = [];
    for (const turn of history) {
      room -= turn.tokens + 4;
      if (room < 0) break;
      kept.push(turn);
    }
    kept.reverse();
    // Trimmed by turns: an answer whose question did not fit goes too (a conversation opening with the
    // model's answer misleads it, and some providers refuse one).
    while (kept[0]?.role === 'assistant') kept.shift();
    let prompt = fixed;
    for (const turn of kept) {
      messages.push({ role: turn.role, content: turn.content });
      prompt += turn.tokens + 4;
    }
    messages.push({ role: 'user', content: input.message });
    // The prompt as counted above (a stored turn keeps its count), not estimated over again.
    const most = holdTokens(prompt, maxTokens);

    const { value, creditsUsed, tokens } = await this.credits.spend(
      caller,
      { credits: creditsFor(most, model), key: `chat:${meta.requestId}`, feature: 'chat', model },
      async () => {
        const request = { model, messages, maxTokens, signal: stream?.signal };
        stream?.onStart?.();
        // A client that goes away ends in ProviderCallAborted: spend() commits what it used.
        const completion = stream ? await this.engine.stream(request, stream.onDelta) : await this.engine.complete(request);
        return { value: completion, tokens: completion.usage.totalTokens, credits: creditsFor(completion.usage.totalTokens, model) };
      },
      (completion) =>
        this.remember(caller, input.sessionId, agent, [
          { role: 'user', content: input.message, tokens: userTokens },
          { role: 'assistant', content: completion.content, tokens: completion.usage.completionTokens },
        ]),
    );
    return { response: value.content, tokens, sessionId: input.sessionId, creditsUsed, model: model.id, sources };
  }

  /** The session's turns, newest first (at most HISTORY_TURNS_MAX). */
  private history(caller: ModuleCaller, key: string): readonly Turn[] {
    const session = this.reads.get<{ id: string; revision: number }>('select id, revision from chat_sessions where user_id = ? and key = ?', caller.userId, key);
    if (!session) return [];
    return this.histories.get(session.id, session.revision, () =>
      this.reads.all<Turn>(
        'select role, content, tokens from chat_messages where session_id = ? order by created_at desc, id desc limit ?',
        session.id,
        HISTORY_TURNS_MAX,
      ),
    );
  }

  /** The write that stores a finished exchange in the user's session (created on its first exchange): made in its credits' commit. */
  private remember(caller: ModuleCaller, key: string, agent: ChatAgent, turns: Turn[]): AlongsideWrite {
    return (sql, now) => {
      const existing = sql.get<{ id: string; revision: number }>('select id, revision from chat_sessions where user_id = ? and key = ?', caller.userId, key);
      const sessionId = existing?.id ?? uuidv7();
      const from = existing?.revision ?? 0;
      // Strictly after the session's last message: exchanges committed in the same millisecond keep their
      // commit order when read back, as the cached history has them (ties would fall to the random ids).
      const last = existing ? (sql.get<{ at: number | null }>('select max(created_at) as at from chat_messages where session_id = ?', sessionId)?.at ?? 0) : 0;
      const at = Math.max(now, last + 1);
      if (existing) sql.run('update chat_sessions set agent = ?, updated_at = ?, revision = ? where id = ?', agent, now, from + 1, sessionId);
      else {
        sql.run(
          'insert into chat_sessions (id, company_id, user_id, key, agent, created_at, updated_at, revision) values (?, ?, ?, ?, ?, ?, ?, ?)',
          sessionId,
          caller.companyId,
          caller.userId,
          key,
          agent,
          now,
          now,
          from + 1,
        );
      }
      // Distinct times keep the order of a turn's two messages.
      turns.forEach((turn, i) =>
        sql.run('insert into chat_messages (id, session_id, role, content, tokens, created_at) values (?, ?, ?, ?, ?, ?)', uuidv7(), sessionId, turn.role, turn.content, turn.tokens, at + i),
      );
      sql.afterCommit(() => this.histories.appended(sessionId, from, from + 1, [...turns].reverse()));
    };
  }
}

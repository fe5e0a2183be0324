import type { Orm } from '../../db/orm';
import { currentEm, transaction } from '../../db/unit-of-work';
import { AppError } from '../../errors/catalog';
import { requireModuleCaller, type ModuleCaller } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import type { CatalogService, ModelView } from '../catalog';
import { Company, User } from '../identity';
import type { AiConfig } from './config';
import { creditsFor, type ModuleCredits } from './credits';
import { estimatePromptTokens, estimateTokens, type AiEngine, type Message } from './engine';
import type { SearchResult, WebSearch } from './web-search';
import { ChatMessage } from './chat-message.entity';
import { ChatSession } from './chat-session.entity';

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
  onDelta(text: string): void;
  /** Aborted when the client goes away: the provider call is aborted and what it used is committed. */
  signal?: AbortSignal;
}

/**
 * Chat with a persona (data/personas.json), server-side history per user and
 * session_id, and optional web search in the context. Each call holds
 * credits for its largest possible cost (the prompt and AI_MAX_OUTPUT_TOKENS)
 * and spends what the provider reports used.
 */
export class ChatService {
  constructor(
    private readonly orm: Orm,
    private readonly config: AiConfig,
    private readonly engine: AiEngine,
    private readonly search: WebSearch,
    private readonly catalog: CatalogService,
    private readonly credits: ModuleCredits,
    private readonly personas: Readonly<Record<ChatAgent, string>>,
  ) {}

  /** Checks the request before anything runs or is spent. */
  prepare(principal: Principal, input: ChatInput): { caller: ModuleCaller; agent: ChatAgent; model: ModelView } {
    const caller = requireModuleCaller(principal, 'chat');
    const issues = [];
    if (!input.message.trim()) issues.push({ loc: ['body', 'message'], msg: 'must not be empty', type: 'string_too_short' });
    if (input.message.length > CHAT_MESSAGE_MAX) issues.push({ loc: ['body', 'message'], msg: `at most ${CHAT_MESSAGE_MAX} characters`, type: 'string_too_long' });
    if (!(chatAgents as readonly string[]).includes(input.agent)) issues.push({ loc: ['body', 'agent'], msg: `must be one of ${chatAgents.join(', ')}`, type: 'enum' });
    if (!input.sessionId.trim() || input.sessionId.length > SESSION_ID_MAX || /\p{Cc}/u.test(input.sessionId)) {
      issues.push({ loc: ['body', 'session_id'], msg: `1 to ${SESSION_ID_MAX} characters, no control characters`, type: 'string_length' });
    }
    if (issues.length) throw AppError.validation(issues);
    const model = this.catalog.resolve(input.model ?? this.config.defaultModel);
    this.engine.requireConfigured();
    if (input.webSearch) this.search.requireConfigured();
    return { caller, agent: input.agent as ChatAgent, model };
  }

  async chat(principal: Principal, input: ChatInput, meta: RequestMeta, stream?: ChatStreamHooks): Promise<ChatReply> {
    const { caller, agent, model } = this.prepare(principal, input);
    const history = await this.history(caller, input.sessionId);
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
    const maxTokens = this.config.maxOutputTokens;
    const messages: Message[] = [{ role: 'system', content: system }];
    const userTokens = estimateTokens(input.message);
    // History fits what the model's context leaves after the system prompt, the message and the reply.
    let room = model.contextLength - maxTokens - estimatePromptTokens(messages) - userTokens - 8;
    const kept: Message[] = [];
    for (const turn of history) {
      room -= turn.tokens + 4;
      if (room < 0) break;
      kept.unshift({ role: turn.role, content: turn.content });
    }
    messages.push(...kept, { role: 'user', content: input.message });
    // The provider's tokenizer may count the prompt higher than the estimate: hold half as much again.
    const most = Math.ceil(estimatePromptTokens(messages) * 1.5) + maxTokens;

    const { value, creditsUsed, tokens } = await this.credits.spend(
      caller,
      { credits: creditsFor(most, model), key: `chat:${meta.requestId}`, feature: 'chat', model },
      async () => {
        const request = { model, messages, maxTokens, signal: stream?.signal };
        // A client that goes away ends in ProviderCallAborted: spend() commits what it used.
        const completion = stream ? await this.engine.stream(request, stream.onDelta) : await this.engine.complete(request);
        return { value: completion, tokens: completion.usage.totalTokens, credits: creditsFor(completion.usage.totalTokens, model) };
      },
    );
    await this.remember(caller, input.sessionId, agent, [
      { role: 'user', content: input.message, tokens: value.usage.estimated ? userTokens : Math.max(1, userTokens) },
      { role: 'assistant', content: value.content, tokens: value.usage.completionTokens },
    ]);
    return { response: value.content, tokens, sessionId: input.sessionId, creditsUsed, model: model.id, sources };
  }

  /** The session's turns, newest first (at most HISTORY_TURNS_MAX). */
  private async history(caller: ModuleCaller, key: string): Promise<ChatMessage[]> {
    const em = currentEm(this.orm);
    const session = await em.findOne(ChatSession, { user: caller.userId, key }, { fields: ['id'] });
    if (!session) return [];
    return em.find(ChatMessage, { session: session.id }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: HISTORY_TURNS_MAX });
  }

  /** Stores a finished exchange in the user's session (created on its first exchange). */
  private async remember(caller: ModuleCaller, key: string, agent: ChatAgent, turns: { role: 'user' | 'assistant'; content: string; tokens: number }[]): Promise<void> {
    await transaction(this.orm, async () => {
      const em = currentEm(this.orm);
      let session = await em.findOne(ChatSession, { user: caller.userId, key });
      const now = new Date();
      if (!session) {
        session = em.create(ChatSession, { company: em.getReference(Company, caller.companyId), user: em.getReference(User, caller.userId), key, agent });
      }
      session.updatedAt = now;
      session.agent = agent;
      // Distinct times keep the order of a turn's two messages.
      turns.forEach((turn, i) => em.create(ChatMessage, { session, role: turn.role, content: turn.content, tokens: turn.tokens, createdAt: new Date(now.getTime() + i) }));
      await em.flush();
    });
  }
}

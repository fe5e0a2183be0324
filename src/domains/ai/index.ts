import { defineDomain, type ApiOf } from '../../kernel/domain';
import { readSeed } from '../../seed-data';
import { billingDomain } from '../billing';
import { catalogDomain } from '../catalog';
import { identityDomain } from '../identity';
import { paymentsDomain } from '../payments';
import { ModuleAccountService } from './account.service';
import { ChatMessage } from './chat-message.entity';
import { ChatSession } from './chat-session.entity';
import { ChatService, chatAgents, type ChatAgent } from './chat.service';
import { loadAiConfig } from './config';
import { ModuleCredits } from './credits';
import { AiEngine } from './engine';
import { aiErrors } from './errors';
import { aiMigrations } from './migrations';
import { StudioService } from './studio.service';
import { AgentService } from './agent.service';
import { WebSearch } from './web-search';

export { ChatService, chatAgents, CHAT_MESSAGE_MAX, SESSION_ID_MAX, type ChatAgent, type ChatInput, type ChatReply, type ChatSource } from './chat.service';
export { StudioService, studioModes, STUDIO_TEXT_MAX, languageName, type StudioMode, type StudioResult, type LanguageGuess } from './studio.service';
export { AgentService, agentTools, AGENT_TASK_MAX, type AgentTool, type AgentRun, type AgentStep } from './agent.service';
export { calculate } from './tools/calculator';
export { runCode, DEFAULT_CODE_LIMITS, type CodeRunResult, type CodeRunLimits } from './tools/code-runner';
export { ModuleAccountService, type KeyVerification, type ModuleUsage } from './account.service';
export { AiEngine, ProviderCallAborted, estimateTokens, holdTokens, worthRetrying, type Completion, type TokenUsage } from './engine';
export { ModuleCredits, creditsFor, modulesApiSpelling } from './credits';
export { WebSearch, type SearchResult } from './web-search';
export { type AiConfig, loadAiConfig } from './config';

/** The personas of the chat agents (data/personas.json); every agent must have one. */
function personas(): Record<ChatAgent, string> {
  const seed = readSeed<Record<string, string>>('personas.json');
  for (const agent of chatAgents) if (!seed[agent]?.trim()) throw new Error(`data/personas.json has no persona for the agent "${agent}"`);
  return seed as Record<ChatAgent, string>;
}

/**
 * The AI modules: an engine for any OpenAI-compatible server, chat with
 * personas, history and web search, studio (translation, rewrites, language
 * detection), and what a key may ask about its account. Credits move only
 * through billing's reserve, commit and release.
 */
export const aiDomain = defineDomain({
  name: 'ai',
  requires: { identity: identityDomain, billing: billingDomain, catalog: catalogDomain, payments: paymentsDomain },
  entities: [ChatSession, ChatMessage],
  migrations: aiMigrations,
  errors: aiErrors,
  config: loadAiConfig,
  create: ({ kernel, config, deps }) => {
    const engine = new AiEngine(config.ai);
    const search = new WebSearch(config.ai);
    const credits = new ModuleCredits(deps.billing);
    return {
      config: config.ai,
      engine,
      search,
      credits,
      chat: new ChatService(kernel.reads, config.ai, engine, search, deps.catalog.models, credits, personas()),
      studio: new StudioService(config.ai, engine, deps.catalog.models, credits),
      agent: new AgentService(config.ai, engine, search, deps.catalog.models, credits),
      account: new ModuleAccountService(deps.identity, deps.billing, deps.payments, kernel.budgets),
    };
  },
});

export type AiApi = ApiOf<typeof aiDomain>;

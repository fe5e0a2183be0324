import { ConfigError, int, list, TIMER_MAX_SECONDS, type Env } from '../../env';

/**
 * The AI engine (AI_*) and web search (WEB_SEARCH_*). Without AI_BASE_URL
 * the generative operations answer 503 ai_provider_not_configured and spend
 * nothing; without WEB_SEARCH_URL web search answers 503
 * web_search_not_configured.
 */
export interface AiConfig {
  /** Base URL of any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LiteLLM, OpenAI); null: none. */
  baseUrl: string | null;
  apiKey: string | null;
  /** Catalog model id to the provider's model name; unmapped ids are sent as they are. */
  modelMap: ReadonlyMap<string, string>;
  /** The model used when a request names none (a catalog id or a family). */
  defaultModel: string;
  /** Per provider call, retries and body included; for a stream, per wait for its next chunk. In ms (AI_TIMEOUT_SECONDS, 60). */
  timeoutMs: number;
  /** Retries of a provider call on 429, 5xx and connection errors, with backoff (AI_MAX_RETRIES, 2). */
  maxRetries: number;
  /** Tokens a chat reply or a rewrite may use at most (AI_MAX_OUTPUT_TOKENS, 1024): what a call reserves for. */
  maxOutputTokens: number;
  /** Tool calls an agent run may make (AGENT_MAX_STEPS, 6). */
  agentMaxSteps: number;
  /** SearXNG-compatible search endpoint; null: none. */
  webSearchUrl: string | null;
  /** Results a search puts into the context (WEB_SEARCH_RESULTS, 5). */
  webSearchResults: number;
}

function url(env: Env, name: string): string | null {
  const value = env[name]?.trim();
  if (!value) return null;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be a URL, got "${value}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`${name} must be http(s), got "${value}"`);
  return value.replace(/\/+$/, '');
}

export function loadAiConfig(env: Env): { ai: AiConfig } {
  const modelMap = new Map<string, string>();
  for (const pair of list(env, 'AI_MODEL_MAP')) {
    // The provider's name may itself hold colons (llama3.1:70b): split at the first.
    const at = pair.indexOf(':');
    const id = pair.slice(0, at).trim();
    const name = pair.slice(at + 1).trim();
    if (at < 1 || !name) throw new ConfigError(`AI_MODEL_MAP must be catalog-id:provider-name pairs separated by commas, got "${pair}"`);
    modelMap.set(id, name);
  }
  return {
    ai: {
      baseUrl: url(env, 'AI_BASE_URL'),
      apiKey: env.AI_API_KEY?.trim() || null,
      modelMap,
      defaultModel: env.AI_DEFAULT_MODEL?.trim() || 'gpt',
      timeoutMs: int(env, 'AI_TIMEOUT_SECONDS', 60, 1, TIMER_MAX_SECONDS) * 1000,
      maxRetries: int(env, 'AI_MAX_RETRIES', 2, 0),
      maxOutputTokens: int(env, 'AI_MAX_OUTPUT_TOKENS', 1024, 16),
      agentMaxSteps: int(env, 'AGENT_MAX_STEPS', 6, 1),
      webSearchUrl: url(env, 'WEB_SEARCH_URL'),
      webSearchResults: int(env, 'WEB_SEARCH_RESULTS', 5, 1),
    },
  };
}

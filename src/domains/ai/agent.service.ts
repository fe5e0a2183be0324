import { AppError, isAppError, type ValidationIssue } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { requireModuleCaller } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import type { CatalogService } from '../catalog';
import type { AiConfig } from './config';
import { creditsFor, type ModuleCredits } from './credits';
import { clipToTokens, holdTokens, type AiEngine, type Message, type Tool } from './engine';
import type { WebSearch } from './web-search';
import { calculate } from './tools/calculator';
import { runCode } from './tools/code-runner';

export const agentTools = ['web_search', 'calculator', 'code_runner'] as const;
export type AgentTool = (typeof agentTools)[number];
export const AGENT_TASK_MAX = 8000;
/** What one tool result may put back into the context, in estimated tokens (4,000 characters of English). */
const TOOL_OUTPUT_TOKENS = 1000;
/** Sandboxes running at once, process-wide (each is a worker thread with up to 32 MB of WASM memory); more wait their turn. */
const SANDBOXES_AT_ONCE = 4;

/** A counting semaphore: at most `size` holders, the rest queue in order. */
class Turns {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.held >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.held++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.held--;
    }
  }
}

export interface AgentStep {
  tool: string;
  input: string;
  output: string;
}

export interface AgentRun {
  output: string;
  steps: AgentStep[];
  tokens: number;
  creditsUsed: number;
  model: string;
}

const DEFINITIONS: Record<AgentTool, Tool> = {
  web_search: {
    type: 'function',
    function: {
      name: 'web_search',
      description: 'Search the web. Returns the top results with title, url and a snippet.',
      parameters: { type: 'object', properties: { query: { type: 'string', description: 'What to search for' } }, required: ['query'] },
    },
  },
  calculator: {
    type: 'function',
    function: {
      name: 'calculator',
      description: 'Evaluate an arithmetic expression: + - * / % ^, parentheses, pi, e, sqrt, abs, round, floor, ceil, min, max, log, log10, log2, exp, sin, cos, tan, factorial !.',
      parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    },
  },
  code_runner: {
    type: 'function',
    function: {
      name: 'code_runner',
      description: 'Run JavaScript in a sandbox without any host access (no require, process, network or files) for up to 2 seconds. Returns what it printed with console.log and the value of its last expression.',
      parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
    },
  },
};

const SYSTEM =
  'You are an agent that completes the user\'s task. Use the tools offered when they help; call one tool at a time and read its result. ' +
  'When you have the answer, reply with it directly, without calling a tool.';

/**
 * Agent runs: the model is offered only the requested tools, as OpenAI
 * function calls, in a loop of at most AGENT_MAX_STEPS tool calls; each
 * call's input and output is a step of the answer. The calculator parses
 * arithmetic (never eval); code runs in the QuickJS sandbox; web search asks
 * the operator's search endpoint and fetches no page.
 */
export class AgentService {
  private readonly sandboxes = new Turns(SANDBOXES_AT_ONCE);

  constructor(
    private readonly config: AiConfig,
    private readonly engine: AiEngine,
    private readonly search: WebSearch,
    private readonly catalog: CatalogService,
    private readonly credits: ModuleCredits,
  ) {}

  async run(principal: Principal, input: { task: string; tools?: readonly string[] | null; model?: string | null }, meta: RequestMeta): Promise<AgentRun> {
    const caller = requireModuleCaller(principal, 'agent');
    const issues: ValidationIssue[] = [];
    if (!input.task.trim()) issues.push({ loc: ['body', 'task'], msg: 'must not be empty', type: 'string_too_short' });
    if (textLength(input.task) > AGENT_TASK_MAX) issues.push({ loc: ['body', 'task'], msg: `at most ${AGENT_TASK_MAX} characters`, type: 'string_too_long' });
    const tools = [...new Set(input.tools ?? [])];
    tools.forEach((tool, i) => {
      if (!(agentTools as readonly string[]).includes(tool)) issues.push({ loc: ['body', 'tools', i], msg: `must be one of ${agentTools.join(', ')}`, type: 'enum' });
    });
    if (issues.length) throw AppError.validation(issues);
    const model = this.catalog.resolve(input.model ?? this.config.defaultModel);
    this.engine.requireConfigured();
    if (tools.includes('web_search')) this.search.requireConfigured();

    const messages: Message[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: input.task },
    ];
    const maxSteps = this.config.agentMaxSteps;
    const maxTokens = this.config.maxOutputTokens;
    // The largest run: every call's prompt grown by the steps before it, plus its reply. A step adds
    // the reply that asked for it (at most maxTokens, counted by the provider's own tokenizer) and
    // the tool's result, estimated, so held at twice its estimate as every prompt is.
    const base = holdTokens(messages, maxTokens);
    const perStep = holdTokens(TOOL_OUTPUT_TOKENS + 16, maxTokens);
    let most = 0;
    for (let k = 0; k <= maxSteps; k++) most += base + k * perStep;

    const offered = (tools as AgentTool[]).map((tool) => DEFINITIONS[tool]);
    const { value, creditsUsed, tokens } = await this.credits.spend(
      caller,
      { credits: creditsFor(most, model), key: `agent:${meta.requestId}`, feature: 'agent', model },
      async () => {
        const steps: AgentStep[] = [];
        let used = 0;
        try {
          for (;;) {
            const last = steps.length >= maxSteps;
            const completion = await this.engine.complete({ model, messages, maxTokens, ...(last || !offered.length ? {} : { tools: offered }) });
            used += completion.usage.totalTokens;
            if (!completion.toolCalls.length || last) {
              return { value: { output: completion.content, steps }, tokens: used, credits: creditsFor(used, model) };
            }
            messages.push({
              role: 'assistant',
              content: completion.content || null,
              tool_calls: completion.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
            });
            for (const call of completion.toolCalls) {
              const step = steps.length < maxSteps ? await this.runTool(call.name, call.arguments, tools as AgentTool[]) : { tool: call.name, input: call.arguments, output: 'step limit reached' };
              if (steps.length < maxSteps) steps.push(step);
              messages.push({ role: 'tool', tool_call_id: call.id, content: step.output });
            }
            if (steps.length >= maxSteps) messages.push({ role: 'user', content: 'The step limit is reached: answer now with what you have.' });
          }
        } catch (error) {
          // A provider failure after some calls: those calls' tokens are spent.
          throw Object.assign(error as object, { usedTokens: used });
        }
      },
    );
    return { output: value.output, steps: value.steps, tokens, creditsUsed, model: model.id };
  }

  /** One tool call; a tool's own failure is its output, for the model to read. */
  private async runTool(name: string, rawArguments: string, allowed: AgentTool[]): Promise<AgentStep> {
    let args: Record<string, unknown>;
    try {
      args = JSON.parse(rawArguments || '{}') as Record<string, unknown>;
    } catch {
      return { tool: name, input: rawArguments, output: 'error: the arguments are not JSON' };
    }
    const text = (key: string) => (typeof args[key] === 'string' ? (args[key] as string) : '');
    if (!(allowed as string[]).includes(name)) return { tool: name, input: rawArguments, output: `error: the tool ${name} is not available` };
    try {
      switch (name as AgentTool) {
        case 'calculator': {
          const { result } = calculate(text('expression'));
          return { tool: name, input: text('expression'), output: String(result) };
        }
        case 'code_runner': {
          const run = await this.sandboxes.run(() => runCode(text('code')));
          const output = run.ok ? `${run.output}${run.result !== undefined ? `result: ${run.result}` : ''}` : `error: ${run.error}${run.output ? `\noutput: ${run.output}` : ''}`;
          return { tool: name, input: text('code'), output: clipToTokens(output, TOOL_OUTPUT_TOKENS) };
        }
        case 'web_search': {
          const results = await this.search.search(text('query'));
          return { tool: name, input: text('query'), output: clipToTokens(JSON.stringify(results.map((r) => ({ title: r.title, url: r.url, snippet: r.content }))), TOOL_OUTPUT_TOKENS) };
        }
      }
    } catch (error) {
      if (!isAppError(error)) throw error;
      return { tool: name, input: rawArguments, output: `error: ${error.message}` };
    }
    return { tool: name, input: rawArguments, output: 'error: unknown tool' };
  }
}

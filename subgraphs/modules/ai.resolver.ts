import { Arg, Ctx, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { Access } from '../policy/access';
import { isAppError } from '../../src/errors/catalog';
import { STUDIO_TEXT_MAX, type AgentService, type AiApi, type ChatService, type ModuleAccountService, type StudioService } from '../../src/domains/ai';
import type { GraphQLContext } from '../context';
import { RestArgs } from '../rest';
import {
  AgentRunInput,
  AgentRunType,
  ChatInput,
  ChatReplyType,
  ChatStreamEventType,
  KeyVerificationType,
  LanguageGuessType,
  ModuleUsageType,
  StudioInput,
  StudioResultType,
} from './ai.types';

type StreamEvent = ChatStreamEventType;

/**
 * A chat reply as events for a subscription: the service runs once, its
 * deltas queue up, and the iterator ends after `done` or `error`. A client
 * that unsubscribes aborts the provider call (what it used is committed).
 * The subscription starts once the service is past its checks and has held
 * the credits (onStart), as POST /chat's stream does: a refusal before that
 * (an unknown or blocked model, 402, no search configured) is thrown, so
 * the client gets a GraphQL error with its code, not a data event.
 */
async function chatEvents(chat: ChatService, ctx: GraphQLContext, input: ChatInput): Promise<AsyncIterableIterator<StreamEvent>> {
  const queue: StreamEvent[] = [];
  let wake: (() => void) | null = null;
  let finished = false;
  const abort = new AbortController();
  const push = (event: StreamEvent) => {
    queue.push(event);
    wake?.();
  };
  let started = false;
  let markStarted!: () => void;
  const start = new Promise<void>((resolve) => (markStarted = resolve));
  const reply = chat.chat(ctx.principal, input, ctx.meta, {
    onStart: () => {
      started = true;
      markStarted();
    },
    onDelta: (text) => push({ type: 'delta', text }),
    signal: abort.signal,
  });
  reply
    .then(
      (done) => push({ type: 'done', tokens: done.tokens, creditsUsed: done.creditsUsed, sessionId: done.sessionId, model: done.model }),
      (error: unknown) => {
        if (!started) return;
        push({
          type: 'error',
          code: isAppError(error) ? error.code : 'internal_error',
          detail: isAppError(error) ? error.message : 'The reply failed',
          sessionId: input.sessionId,
        });
      },
    )
    .finally(() => {
      finished = true;
      wake?.();
    });
  // Whichever comes first: the start, or the refusal, thrown as it is.
  await Promise.race([start, reply.then(() => undefined)]);
  const iterator: AsyncIterableIterator<StreamEvent> = {
    async next() {
      while (!queue.length && !finished) await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
      const event = queue.shift();
      return event ? { value: event, done: false } : { value: undefined, done: true };
    },
    async return() {
      abort.abort();
      finished = true;
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}

const COST = 'Costs tokens ÷ 1,000 × the model\'s credit cost (catalog), rounded up: held for the largest possible call before it runs, spent at what it used.';

/** The AI modules for signed-in users and AI-modules keys: thin over the ai domain's services. */
@Resolver()
export class AiModulesResolver {
  static from = ({ ai }: { ai: AiApi }) => new AiModulesResolver(ai.chat, ai.studio, ai.agent, ai.account);

  constructor(
    readonly chatService: ChatService,
    private readonly studio: StudioService,
    private readonly agent: AgentService,
    private readonly account: ModuleAccountService,
  ) {}

  @Access({ auth: 'modules' })
  @Mutation(() => AgentRunType, {
    description:
      'Runs a task with the requested tools (web_search, calculator, code_runner) as function calls, in a loop of at most ' +
      `AGENT_MAX_STEPS tool calls; answers the output and each step (scope agent). ${COST} Every call of the loop counts. 503 without AI_BASE_URL (or WEB_SEARCH_URL for web_search).`,
  })
  agentRun(@Arg('input', () => AgentRunInput) input: AgentRunInput, @Ctx() ctx: GraphQLContext) {
    return this.agent.run(ctx.principal, input, ctx.meta);
  }

  @Access({ auth: 'modules' })
  @Query(() => KeyVerificationType, { description: 'The presented AI-modules key: its user, plan and scopes (keys only)' })
  apiKeyVerification(@Ctx() ctx: GraphQLContext) {
    return this.account.verify(ctx.principal);
  }

  @Access({ auth: 'modules' })
  @Query(() => ModuleUsageType, { description: "The caller's plan, credits left, monthly credits and trial days left" })
  moduleUsage(@Ctx() ctx: GraphQLContext) {
    return this.account.usage(ctx.principal);
  }

  @Access({ auth: 'modules' })
  @Mutation(() => ChatReplyType, {
    description: `A chat reply from a persona, keeping the session's history (scope chat). ${COST} 503 without AI_BASE_URL (or WEB_SEARCH_URL for web_search), spending nothing.`,
  })
  chat(@Arg('input', () => ChatInput) input: ChatInput, @Ctx() ctx: GraphQLContext) {
    return this.chatService.chat(ctx.principal, input, ctx.meta);
  }

  @Access({ auth: 'modules' })
  @Subscription(() => ChatStreamEventType, {
    description:
      `The same chat reply streamed: delta events, then done (tokens, credits, model) or error. A refusal before the reply starts (an unknown or blocked model, ` +
      `no credits, web search not configured) is a GraphQL error with its code, as POST /chat answers it before its stream. ${COST}`,
    subscribe: ({ args, context }) => {
      const ctx = context as GraphQLContext;
      return chatEvents(ctx.container.get(AiModulesResolver).chatService, ctx, (args as { input: ChatInput }).input);
    },
  })
  chatStream(@Root() event: StreamEvent, @Arg('input', () => ChatInput) _input: ChatInput) {
    return event;
  }

  @Access({ auth: 'modules' })
  @Mutation(() => StudioResultType, {
    description: `Translates a text, or rewrites it (grammar, formal, informal) in its own language (scope translate). ${COST} 503 without AI_BASE_URL, spending nothing.`,
  })
  studioProcess(@Arg('input', () => StudioInput) input: StudioInput, @Ctx() ctx: GraphQLContext) {
    return this.studio.process(ctx.principal, input, ctx.meta);
  }

  @Access({ auth: 'modules' })
  @RestArgs({ text: { minLength: 1, maxLength: STUDIO_TEXT_MAX } })
  @Query(() => LanguageGuessType, { description: `The language of a text (up to ${STUDIO_TEXT_MAX} characters), detected offline: free, works without a provider (scope translate)` })
  detectLanguage(@Arg('text') text: string, @Ctx() ctx: GraphQLContext) {
    return this.studio.detect(ctx.principal, text);
  }
}

import { Field, InputType, Int, ObjectType } from 'type-graphql';
import { Rest } from '../rest';
import { moduleScopes } from '../../src/auth/principal';
import { MODEL_NAME_MAX } from '../../src/domains/catalog';
import { AGENT_TASK_MAX, agentTools, CHAT_MESSAGE_MAX, chatAgents, SESSION_ID_MAX, STUDIO_TEXT_MAX, studioModes } from '../../src/domains/ai';

@ObjectType('ApiKeyVerification', { description: 'What the presented AI-modules key is' })
export class KeyVerificationType {
  @Field()
  valid!: boolean;

  @Field({ description: "The key's user (email address)" })
  username!: string;

  @Field({ description: "The company's plan" })
  plan!: string;

  @Rest({ items: { enum: moduleScopes } })
  @Field(() => [String])
  scopes!: string[];

  @Field({ description: 'api_key' })
  authMethod!: string;
}

@ObjectType('ModuleUsage', { description: "The caller's plan and credits" })
export class ModuleUsageType {
  @Field()
  username!: string;

  @Field()
  plan!: string;

  @Field(() => Int, { description: "The company's credits available now (monthly, granted and purchased)" })
  creditsRemaining!: number;

  @Field(() => Int, { description: "The plan's monthly credits" })
  creditsMonthly!: number;

  @Field(() => Int, { nullable: true, description: 'Whole days left of a trial subscription; null without a trial' })
  trialDaysLeft!: number | null;
}

@InputType('ChatInput')
export class ChatInput {
  @Rest({ minLength: 1, maxLength: CHAT_MESSAGE_MAX })
  @Field({ description: `The user's message, 1 to ${CHAT_MESSAGE_MAX} characters` })
  message!: string;

  @Rest({ enum: chatAgents })
  @Field({ description: `The persona: ${chatAgents.join(', ')}` })
  agent!: string;

  @Rest({ minLength: 1, maxLength: SESSION_ID_MAX })
  @Field({ description: "The conversation, chosen by the caller: reusing it keeps the history (per user: another user's same id is another conversation)" })
  sessionId!: string;

  @Field(() => Boolean, { nullable: true, defaultValue: false, description: 'Search the web and put the results into the context (needs WEB_SEARCH_URL)' })
  webSearch?: boolean | null;

  @Rest({ minLength: 1, maxLength: MODEL_NAME_MAX })
  @Field(() => String, { nullable: true, description: 'A catalog model id or a model family (gpt, claude, mistral, llama: its default model)' })
  model?: string | null;
}

@ObjectType('ChatSource', { description: 'A web search result the reply could draw on' })
export class ChatSourceType {
  @Field()
  title!: string;

  @Field()
  url!: string;

  @Field()
  snippet!: string;
}

@ObjectType('ChatReply')
export class ChatReplyType {
  @Field()
  response!: string;

  @Field(() => Int, { description: 'Tokens of the call: prompt and reply' })
  tokens!: number;

  @Field()
  sessionId!: string;

  @Field(() => Int)
  creditsUsed!: number;

  @Field({ description: 'The catalog model that answered' })
  model!: string;

  @Field(() => [ChatSourceType], { nullable: true, description: 'The web search results, when a search ran' })
  sources!: ChatSourceType[] | null;
}

@ObjectType('ChatStreamEvent', { description: 'One event of a streamed reply: delta (text), then done or error' })
export class ChatStreamEventType {
  @Field({ description: 'delta, done or error' })
  type!: string;

  @Field(() => String, { nullable: true, description: 'delta: the next piece of the reply' })
  text?: string | null;

  @Field(() => Int, { nullable: true, description: 'done: tokens of the call' })
  tokens?: number | null;

  @Field(() => Int, { nullable: true, description: 'done: credits spent' })
  creditsUsed?: number | null;

  @Field(() => String, { nullable: true })
  sessionId?: string | null;

  @Field(() => String, { nullable: true, description: 'done: the catalog model that answered' })
  model?: string | null;

  @Field(() => String, { nullable: true, description: 'error: the problem code' })
  code?: string | null;

  @Field(() => String, { nullable: true, description: 'error: what went wrong' })
  detail?: string | null;
}

@InputType('StudioInput')
export class StudioInput {
  @Rest({ minLength: 1, maxLength: STUDIO_TEXT_MAX })
  @Field({ description: `The text, 1 to ${STUDIO_TEXT_MAX} characters` })
  text!: string;

  @Rest({ pattern: '^[a-z]{2}$' })
  @Field(() => String, { nullable: true, description: 'ISO 639-1 code of the text; detected when omitted' })
  sourceLang?: string | null;

  @Rest({ pattern: '^[a-z]{2}$' })
  @Field(() => String, { nullable: true, defaultValue: 'en', description: 'ISO 639-1 code to translate into (default en); rewrites keep the source language' })
  targetLang?: string | null;

  @Rest({ enum: studioModes })
  @Field(() => String, { nullable: true, defaultValue: 'translate', description: `${studioModes.join(', ')} (default translate)` })
  mode?: string | null;

  @Rest({ minLength: 1, maxLength: MODEL_NAME_MAX })
  @Field(() => String, { nullable: true, description: 'A catalog model id or a model family' })
  model?: string | null;
}

@ObjectType('StudioResult')
export class StudioResultType {
  @Field()
  result!: string;

  @Field({ description: 'The language of the text: as given, or detected' })
  sourceLang!: string;

  @Field({ description: 'The language of the result' })
  targetLang!: string;

  @Field()
  mode!: string;

  @Field(() => Int)
  tokens!: number;

  @Field(() => Int)
  creditsUsed!: number;
}

@ObjectType('LanguageCandidate')
export class LanguageCandidateType {
  @Field()
  language!: string;

  @Field({ description: '0 to 1' })
  confidence!: number;
}

@ObjectType('LanguageGuess', { description: 'The language of a text, detected offline' })
export class LanguageGuessType {
  @Field(() => String, { nullable: true, description: 'ISO 639-1 code; null when the text gives no clue' })
  language!: string | null;

  @Field(() => String, { nullable: true, description: 'The language in English' })
  name!: string | null;

  @Field({ description: '0 to 1' })
  confidence!: number;

  @Field(() => [LanguageCandidateType], { description: 'The likeliest languages, best first' })
  candidates!: LanguageCandidateType[];
}

@InputType('AgentRunInput')
export class AgentRunInput {
  @Rest({ minLength: 1, maxLength: AGENT_TASK_MAX })
  @Field({ description: `What to do, 1 to ${AGENT_TASK_MAX} characters` })
  task!: string;

  @Rest({ maxItems: agentTools.length, items: { enum: agentTools } })
  @Field(() => [String], { nullable: true, description: `The tools the model is offered: any of ${agentTools.join(', ')} (none when omitted)` })
  tools?: string[] | null;

  @Rest({ minLength: 1, maxLength: MODEL_NAME_MAX })
  @Field(() => String, { nullable: true, description: 'A catalog model id or a model family' })
  model?: string | null;
}

@ObjectType('AgentStep', { description: 'One tool call of an agent run' })
export class AgentStepType {
  @Field()
  tool!: string;

  @Field({ description: 'What the model passed to the tool' })
  input!: string;

  @Field({ description: 'What the tool answered (an error is "error: …")' })
  output!: string;
}

@ObjectType('AgentRun')
export class AgentRunType {
  @Field({ description: "The model's answer" })
  output!: string;

  @Field(() => [AgentStepType])
  steps!: AgentStepType[];

  @Field(() => Int)
  tokens!: number;

  @Field(() => Int)
  creditsUsed!: number;

  @Field()
  model!: string;
}

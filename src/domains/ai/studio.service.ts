import { detectAll } from 'tinyld';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import { textLength } from '../../errors/text-length';
import { requireModuleCaller } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import type { CatalogService } from '../catalog';
import type { AiConfig } from './config';
import { creditsFor, type ModuleCredits } from './credits';
import { estimatePromptTokens, holdTokens, type AiEngine, type Message } from './engine';

export const studioModes = ['translate', 'grammar', 'formal', 'informal'] as const;
export type StudioMode = (typeof studioModes)[number];
export const STUDIO_TEXT_MAX = 20_000;

const languageNames = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });

/** The English name of an ISO 639-1 code, or undefined when it is not one. */
export function languageName(code: string): string | undefined {
  if (!/^[a-z]{2}$/.test(code)) return undefined;
  const name = languageNames.of(code);
  return name && name !== code ? name : undefined;
}

export interface LanguageGuess {
  language: string | null;
  name: string | null;
  /** 0 to 1. */
  confidence: number;
  candidates: { language: string; confidence: number }[];
}

export interface StudioResult {
  result: string;
  sourceLang: string;
  targetLang: string;
  mode: StudioMode;
  tokens: number;
  creditsUsed: number;
}

const INSTRUCTIONS: Record<StudioMode, (source: string, target: string) => string> = {
  translate: (source, target) => `Translate the user's text from ${source} into ${target}. Keep formatting, names and numbers. Reply with the translation only.`,
  grammar: (source) => `Correct the grammar, spelling and punctuation of the user's ${source} text without changing its meaning, tone or language. Reply with the corrected text only.`,
  formal: (source) => `Rewrite the user's ${source} text in a formal, professional register, in the same language and with the same meaning. Reply with the rewritten text only.`,
  informal: (source) => `Rewrite the user's ${source} text in a relaxed, informal register, in the same language and with the same meaning. Reply with the rewritten text only.`,
};

/**
 * Studio: translation and rewrites (grammar, formal, informal) by the model,
 * and language detection, which is offline (tinyld) and works without a
 * provider. Rewrites keep the source language; target_lang is for
 * translations.
 */
export class StudioService {
  constructor(
    private readonly config: AiConfig,
    private readonly engine: AiEngine,
    private readonly catalog: CatalogService,
    private readonly credits: ModuleCredits,
  ) {}

  detect(principal: Principal, text: string): LanguageGuess {
    requireModuleCaller(principal, 'translate');
    checkText(text);
    return guess(text);
  }

  async process(
    principal: Principal,
    input: { text: string; sourceLang?: string | null; targetLang?: string | null; mode?: string | null; model?: string | null },
    meta: RequestMeta,
  ): Promise<StudioResult> {
    const caller = requireModuleCaller(principal, 'translate');
    checkText(input.text);
    const issues: ValidationIssue[] = [];
    const mode = (input.mode ?? 'translate') as StudioMode;
    if (!studioModes.includes(mode)) issues.push({ loc: ['body', 'mode'], msg: `must be one of ${studioModes.join(', ')}`, type: 'enum' });
    const target = input.targetLang ?? 'en';
    if (!languageName(target)) issues.push({ loc: ['body', 'target_lang'], msg: 'must be an ISO 639-1 language code (en, nl, de, …)', type: 'language_code' });
    if (input.sourceLang != null && !languageName(input.sourceLang)) {
      issues.push({ loc: ['body', 'source_lang'], msg: 'must be an ISO 639-1 language code, or omitted to detect it', type: 'language_code' });
    }
    if (issues.length) throw AppError.validation(issues);
    const model = this.catalog.resolve(input.model ?? this.config.defaultModel);
    this.engine.requireConfigured();
    const source = input.sourceLang ?? guess(input.text).language ?? 'und';
    const sourceName = languageName(source) ?? 'the original language';
    const messages: Message[] = [
      { role: 'system', content: INSTRUCTIONS[mode](sourceName, languageName(target)!) },
      { role: 'user', content: input.text },
    ];
    // A rewrite is about as long as its text; room for twice that, within the output cap.
    const maxTokens = Math.min(this.config.maxOutputTokens * 4, Math.max(256, estimatePromptTokens(messages) * 2));
    const { value, creditsUsed, tokens } = await this.credits.spend(
      caller,
      { credits: creditsFor(holdTokens(messages, maxTokens), model), key: `studio:${meta.requestId}`, feature: 'studio', model },
      async () => {
        const completion = await this.engine.complete({ model, messages, maxTokens });
        return { value: completion, tokens: completion.usage.totalTokens, credits: creditsFor(completion.usage.totalTokens, model) };
      },
    );
    return { result: value.content.trim(), sourceLang: source, targetLang: mode === 'translate' ? target : source, mode, tokens, creditsUsed };
  }
}

function checkText(text: string): void {
  if (!text.trim()) throw AppError.validation([{ loc: ['body', 'text'], msg: 'must not be empty', type: 'string_too_short' }]);
  if (textLength(text) > STUDIO_TEXT_MAX) throw AppError.validation([{ loc: ['body', 'text'], msg: `at most ${STUDIO_TEXT_MAX} characters`, type: 'string_too_long' }]);
}

function guess(text: string): LanguageGuess {
  const all = detectAll(text.slice(0, 5000)).slice(0, 3);
  const best = all[0];
  return {
    language: best?.lang ?? null,
    name: best ? (languageName(best.lang) ?? null) : null,
    confidence: best ? Math.round(best.accuracy * 1000) / 1000 : 0,
    candidates: all.map((c) => ({ language: c.lang, confidence: Math.round(c.accuracy * 1000) / 1000 })),
  };
}

import type { Orm } from '../../db/orm';
import type { ReadStore } from '../../db/read-store';
import { Model } from './model.entity';
import { AppError, isAppError } from '../../errors/catalog';
import { currentEm } from '../../db/unit-of-work';
import { clipText } from '../../clip-text';
import { parseMoney } from '../../money';

export type ModelView = Pick<Model, 'id' | 'displayName' | 'provider' | 'family' | 'creditCost' | 'contextLength'>;

interface ModelRow {
  id: string;
  display_name: string;
  provider: string;
  family: string;
  credit_cost: number;
  context_length: number;
}

/** The longest model id or family a request may name (every operation that takes a model publishes it as maxLength). */
export const MODEL_NAME_MAX = 100;

/** A named model as a detail shows it: never longer than a name may be, whatever was sent. */
const shown = (name: string) => (name.length > MODEL_NAME_MAX ? `${clipText(name, MODEL_NAME_MAX)}…` : name);

const MODEL_SELECT = 'select id, display_name, provider, family, credit_cost, context_length from models';

const modelView = (r: ModelRow): ModelView => ({
  id: r.id,
  displayName: r.display_name,
  provider: r.provider,
  family: r.family,
  creditCost: r.credit_cost,
  contextLength: r.context_length,
});

/** An entry of data/models.json: a database row, plus an optional blocked flag and the price per 1,000 tokens (decimal). */
export interface ModelSeed extends ModelRow {
  blocked?: boolean;
  price_per_1k_tokens?: string;
  /** The model its family's name stands for. */
  family_default?: boolean;
}

/** Micro-units of a seed's decimal price ("0.005" is 5,000), with the parser the API uses; a bad one stops the start. */
export function seedPriceMicros(text: string | undefined): number {
  try {
    return parseMoney(text ?? '0', ['price_per_1k_tokens']);
  } catch {
    throw new Error(`data/models.json: price_per_1k_tokens must be a decimal with at most 6 places, got "${text}"`);
  }
}

export class CatalogService {
  constructor(
    private readonly orm: Orm,
    private readonly reads: ReadStore,
  ) {}

  /** Models callers may use: every model not blocked by an administrator. */
  availableModels(): ModelView[] {
    return this.reads.all<ModelRow>(`${MODEL_SELECT} where blocked = 0 order by provider, display_name`).map(modelView);
  }

  /**
   * The one decision on whether a named model may be used, made before any
   * feature runs a model: an unknown id is 404 model_not_found, a blocked one
   * 422 model_blocked (read via the read store, so a block bites on the next
   * request).
   */
  requireUsable(modelId: string): ModelView {
    const row = this.reads.get<ModelRow & { blocked: number }>(`${MODEL_SELECT.replace(' from', ', blocked from')} where id = ?`, modelId);
    if (!row) throw new AppError('model_not_found', `No model ${shown(modelId)} in the catalog`);
    if (row.blocked) throw new AppError('model_blocked', `The model ${shown(modelId)} has been blocked by an administrator`);
    return modelView(row);
  }

  /**
   * The model a request runs on, from a catalog model id or a model family
   * (`gpt`, `claude`, `mistral`, `llama`: the family's default model). The one
   * place that decides it: unknown is 404 model_not_found, blocked 422
   * model_blocked (a family whose default is blocked falls back to its
   * cheapest usable model, and is blocked only when all its models are).
   */
  resolve(modelOrFamily: string): ModelView {
    const byId = this.reads.get<{ id: string }>('select id from models where id = ?', modelOrFamily);
    if (byId) return this.requireUsable(byId.id);
    const members = this.reads.all<ModelRow & { blocked: number; family_default: number }>(
      `${MODEL_SELECT.replace(' from', ', blocked, family_default from')} where family = ? order by family_default desc, credit_cost, id`,
      modelOrFamily,
    );
    if (!members.length) throw new AppError('model_not_found', `No model or model family "${shown(modelOrFamily)}" in the catalog`);
    const usable = members.find((m) => !m.blocked);
    if (!usable) throw new AppError('model_blocked', `Every model of the family ${shown(modelOrFamily)} has been blocked by an administrator`);
    return modelView(usable);
  }

  /** The same decision for callers that answer a refused model as absent (federation's `_entities`). */
  availableModel(id: string): ModelView | null {
    try {
      return this.requireUsable(id);
    } catch (error) {
      if (isAppError(error)) return null;
      throw error;
    }
  }

  /**
   * A catalog model, blocked or not; null when unknown. For reading what was
   * (a usage report's label), never for deciding whether a model may run.
   */
  anyModel(id: string): ModelView | null {
    const row = this.reads.get<ModelRow>(`${MODEL_SELECT} where id = ?`, id);
    return row ? modelView(row) : null;
  }

  /** A model's price per 1,000 tokens in currency micro-units; 0 for an unknown or unpriced model. One prepared read. */
  priceMicrosPer1kTokens(modelId: string): number {
    return this.reads.get<{ price: number }>('select price_micros_per1k_tokens as price from models where id = ?', modelId)?.price ?? 0;
  }

  /**
   * Inserts catalog entries that are missing; never overwrites an
   * administrator's edits, a price of 0 included (the models stored before
   * prices got the seed's once, by Migration20261223000000ModelPriceBackfill).
   */
  async seed(models: ModelSeed[]): Promise<number> {
    const em = currentEm(this.orm);
    const existing = new Map((await em.find(Model, {})).map((m) => [m.id, m]));
    let added = 0;
    for (const m of models) {
      const stored = existing.get(m.id);
      if (stored) continue;
      em.create(Model, {
        id: m.id,
        displayName: m.display_name,
        provider: m.provider,
        family: m.family,
        creditCost: m.credit_cost,
        contextLength: m.context_length,
        blocked: m.blocked ?? false,
        priceMicrosPer1kTokens: seedPriceMicros(m.price_per_1k_tokens),
        familyDefault: m.family_default ?? false,
      });
      added++;
    }
    // A family without a default (as before defaults existed) takes the seed's.
    const all = [...existing.values()];
    for (const m of models) {
      const stored = existing.get(m.id);
      if (stored && m.family_default && !all.some((o) => o.family === stored.family && o.familyDefault)) stored.familyDefault = true;
    }
    await em.flush();
    return added;
  }
}

import type { Orm } from '../../db/orm';
import type { ReadStore } from '../../db/read-store';
import { Model } from './model.entity';
import { AppError, isAppError } from '../../errors/catalog';
import { currentEm } from '../../db/unit-of-work';

export type ModelView = Pick<Model, 'id' | 'displayName' | 'provider' | 'family' | 'creditCost' | 'contextLength'>;

interface ModelRow {
  id: string;
  display_name: string;
  provider: string;
  family: string;
  credit_cost: number;
  context_length: number;
}

const MODEL_SELECT = 'select id, display_name, provider, family, credit_cost, context_length from models';

const modelView = (r: ModelRow): ModelView => ({
  id: r.id,
  displayName: r.display_name,
  provider: r.provider,
  family: r.family,
  creditCost: r.credit_cost,
  contextLength: r.context_length,
});

/** An entry of data/models.json: a database row, plus an optional blocked flag. */
export interface ModelSeed extends ModelRow {
  blocked?: boolean;
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
    if (!row) throw new AppError('model_not_found', `No model ${modelId} in the catalog`);
    if (row.blocked) throw new AppError('model_blocked', `The model ${modelId} has been blocked by an administrator`);
    return modelView(row);
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

  /** Inserts catalog entries that are missing; never overwrites an administrator's edits. */
  async seed(models: ModelSeed[]): Promise<number> {
    const em = currentEm(this.orm);
    const existing = new Set((await em.find(Model, {}, { fields: ['id'] })).map((m) => m.id));
    let added = 0;
    for (const m of models) {
      if (existing.has(m.id)) continue;
      em.create(Model, {
        id: m.id,
        displayName: m.display_name,
        provider: m.provider,
        family: m.family,
        creditCost: m.credit_cost,
        contextLength: m.context_length,
        blocked: m.blocked ?? false,
      });
      added++;
    }
    await em.flush();
    return added;
  }
}

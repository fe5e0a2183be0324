import type { Orm } from '../../db/orm';
import { currentEm } from '../../db/unit-of-work';
import { AppError, isAppError, type ValidationIssue } from '../../errors/catalog';
import { formatMicros, MICROS_PER_UNIT, parseMoney } from '../../money';
import { textLength } from '../../errors/text-length';
import { isSuperadmin, requireCompanyAdmin } from '../../auth/policy';
import type { Principal, RequestMeta } from '../../auth/principal';
import type { AuditService } from '../audit';
import { Model } from './model.entity';

export interface ModelInput {
  id: string;
  displayName: string;
  provider: string;
  family: string;
  creditCost: number;
  contextLength: number;
  blocked?: boolean | null;
  /** The provider's price per 1,000 tokens, a decimal of BILLING_CURRENCY as budgets are written ("0.005"); left out on create, 0. */
  pricePer1kTokens?: string | null;
}

export type ModelPatch = { [K in keyof Omit<ModelInput, 'id'>]?: ModelInput[K] | null };

/** Catalog ids: lower-case slugs such as gpt-4o or claude-3.5-sonnet. */
export const MODEL_ID_PATTERN = '^[a-z0-9][a-z0-9._-]{0,99}$';
const MODEL_ID = new RegExp(MODEL_ID_PATTERN);

/** The highest price per 1,000 tokens ("1000.00"): keeps tokens × price exact in a double for any context length. */
export const MODEL_PRICE_MAX_MICROS = 1_000 * MICROS_PER_UNIT;

/** Micro-units of a price as the API writes it, with the budget's parser; undefined after adding its issue. */
function priceMicros(text: unknown, issues: ValidationIssue[]): number | undefined {
  const loc = ['body', 'price_per_1k_tokens'];
  let micros: number;
  try {
    micros = parseMoney(text as string, loc);
  } catch (error) {
    if (!isAppError(error) || error.code !== 'validation_error') throw error;
    issues.push(...(error.extra.errors as ValidationIssue[]));
    return undefined;
  }
  if (micros > MODEL_PRICE_MAX_MICROS) {
    issues.push({ loc, msg: `must be at most ${formatMicros(MODEL_PRICE_MAX_MICROS)}`, type: 'less_than_equal' });
    return undefined;
  }
  return micros;
}

const FIELDS: { key: keyof ModelInput; loc: string; kind: 'text' | 'text64' | 'cost' | 'context' | 'bool' }[] = [
  { key: 'displayName', loc: 'display_name', kind: 'text' },
  { key: 'provider', loc: 'provider', kind: 'text64' },
  { key: 'family', loc: 'family', kind: 'text64' },
  { key: 'creditCost', loc: 'credit_cost', kind: 'cost' },
  { key: 'contextLength', loc: 'context_length', kind: 'context' },
  { key: 'blocked', loc: 'blocked', kind: 'bool' },
];

function check(input: { [K in keyof ModelInput]?: ModelInput[K] | null }, required: boolean): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const { key, loc, kind } of FIELDS) {
    const value = input[key];
    if (value === undefined || value === null) {
      if (required && kind !== 'bool') issues.push({ loc: ['body', loc], msg: 'field required', type: 'missing' });
      continue;
    }
    if (kind === 'text' || kind === 'text64') {
      const max = kind === 'text' ? 200 : 64;
      if (typeof value !== 'string' || !value.trim() || textLength(value.trim()) > max) {
        issues.push({ loc: ['body', loc], msg: `must be 1 to ${max} characters`, type: 'string_length' });
      }
    } else if (kind === 'cost') {
      if (!Number.isInteger(value) || (value as number) < 0) {
        issues.push({ loc: ['body', loc], msg: 'must be an integer >= 0', type: 'greater_than_equal' });
      }
    } else if (kind === 'context') {
      if (!Number.isInteger(value) || (value as number) < 1) {
        issues.push({ loc: ['body', loc], msg: 'must be an integer > 0', type: 'greater_than' });
      }
    }
  }
  return issues;
}

/**
 * Administration of the platform-wide model catalog. Owners, admins and
 * company API keys may read it (blocked models included); only a platform
 * superadmin may add or change models, since a change affects every company.
 */
export class ModelAdminService {
  constructor(
    private readonly orm: Orm,
    private readonly audit: AuditService,
  ) {}

  async list(principal: Principal): Promise<Model[]> {
    requireCompanyAdmin(principal);
    return currentEm(this.orm).find(Model, {}, { orderBy: { provider: 'asc', displayName: 'asc', id: 'asc' } });
  }

  async create(principal: Principal, input: ModelInput, meta: RequestMeta): Promise<Model> {
    const caller = this.requireCatalogEditor(principal);
    const issues = check(input, true);
    if (typeof input.id !== 'string' || !MODEL_ID.test(input.id)) {
      issues.unshift({ loc: ['body', 'id'], msg: `must match ${MODEL_ID_PATTERN}`, type: 'string_pattern_mismatch' });
    }
    // Unpriced is 0, as before prices could be given here: its usage then costs nothing against a budget.
    const price = input.pricePer1kTokens == null ? 0 : priceMicros(input.pricePer1kTokens, issues);
    if (issues.length) throw AppError.validation(issues);
    const em = currentEm(this.orm);
    if (await em.findOne(Model, { id: input.id })) throw new AppError('conflict', `A model with id ${input.id} already exists`);
    const model = em.create(Model, {
      id: input.id,
      displayName: input.displayName.trim(),
      provider: input.provider.trim(),
      family: input.family.trim(),
      creditCost: input.creditCost,
      contextLength: input.contextLength,
      blocked: input.blocked ?? false,
      priceMicrosPer1kTokens: price,
    });
    // The change and its audit entry commit in one flush (the audit log's).
    await this.audit.record({
      action: 'model.created',
      // The catalog is platform-wide; the entry is kept in the acting superadmin's company log.
      companyId: caller.companyId,
      principal,
      meta,
      targetType: 'model',
      targetId: model.id,
      data: { displayName: model.displayName, provider: model.provider, blocked: model.blocked, pricePer1kTokens: formatMicros(model.priceMicrosPer1kTokens) },
    });
    return model;
  }

  /** Only the fields given change; `blocked: true` hides the model from GET /models and refuses it at once. */
  async update(principal: Principal, modelId: string, patch: ModelPatch, meta: RequestMeta): Promise<Model> {
    const caller = this.requireCatalogEditor(principal);
    const em = currentEm(this.orm);
    const model = await em.findOne(Model, { id: modelId });
    if (!model) throw new AppError('model_not_found', `No model ${modelId} in the catalog`);
    const issues = check(patch, false);
    const price = patch.pricePer1kTokens == null ? undefined : priceMicros(patch.pricePer1kTokens, issues);
    if (issues.length) throw AppError.validation(issues);
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const { key } of FIELDS) {
      const raw = patch[key as keyof ModelPatch];
      if (raw === undefined || raw === null) continue;
      const value = typeof raw === 'string' ? raw.trim() : raw;
      const current = model[key as Exclude<keyof ModelPatch, 'pricePer1kTokens'>];
      if (value !== current) {
        changes[key] = { from: current, to: value };
        Object.assign(model, { [key]: value });
      }
    }
    if (price !== undefined && price !== model.priceMicrosPer1kTokens) {
      changes.pricePer1kTokens = { from: formatMicros(model.priceMicrosPer1kTokens), to: formatMicros(price) };
      model.priceMicrosPer1kTokens = price;
    }
    if (Object.keys(changes).length === 0) return model;
    // The change and its audit entry commit in one flush (the audit log's).
    await this.audit.record({
      action: 'model.updated',
      companyId: caller.companyId,
      principal,
      meta,
      targetType: 'model',
      targetId: model.id,
      data: { changes },
    });
    return model;
  }

  private requireCatalogEditor(principal: Principal) {
    const caller = requireCompanyAdmin(principal);
    if (!isSuperadmin(caller)) throw new AppError('forbidden', 'Only a platform superadmin may change the model catalog');
    return caller;
  }
}

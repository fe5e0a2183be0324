import { raw } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import type { ReadStore } from '../../db/read-store';
import { currentEm } from '../../db/unit-of-work';
import { AppError, type ValidationIssue } from '../../errors/catalog';
import type { Principal } from '../../auth/principal';
import type { LedgerService } from './ledger.service';
import { formatMicros } from './money';
import { UsageRecord } from './usage-record.entity';

export const usageGroups = ['model', 'user', 'feature', 'api_key', 'day'] as const;
export type UsageGroup = (typeof usageGroups)[number];
export const USAGE_DAYS_DEFAULT = 30;
export const USAGE_DAYS_MAX = 365;
/** Groups read per statement while a CSV export streams. */
const EXPORT_CHUNK = 1000;
const DAY_MS = 86_400_000;

export interface UsageByModel {
  model: string;
  credits: number;
  tokens: number;
  requests: number;
  costMicros: number;
  /** Decimal, in the billing currency. */
  cost: string;
}

export interface UsageSummary {
  items: UsageByModel[];
  totals: { credits: number; tokens: number; requests: number; costMicros: number; cost: string };
}

/** One group of a usage report: the key is the model id, user id, feature, API key id or UTC day (YYYY-MM-DD). */
export interface UsageRow {
  key: string | null;
  requests: number;
  tokens: number;
  credits: number;
  costMicros: number;
  cost: string;
}

export interface UsageReport {
  companyId: string;
  groupBy: UsageGroup;
  days: number;
  since: Date;
  currency: string;
  rows: UsageRow[];
  totals: Omit<UsageRow, 'key'>;
}

export interface UsageQuery {
  groupBy?: string | null;
  days?: number | null;
  companyId?: string | null;
}

/** SQL of each grouping: plain expressions any SQL database runs (a day is the integer day number since the epoch). */
const GROUP_SQL: Record<UsageGroup, string> = {
  model: 'model',
  user: 'user_id',
  feature: 'feature',
  api_key: 'api_key_id',
  day: 'created_at / 86400000',
};

interface GroupRow {
  k: string | number | null;
  requests: number;
  tokens: number | null;
  credits: number | null;
  cost: number | null;
}

/** Metered use of models, as the usage reports read it. */
export class UsageService {
  constructor(
    private readonly orm: Orm,
    private readonly reads: ReadStore,
    private readonly ledger: LedgerService,
  ) {}

  /** A user's usage in a company since `since`, by model (most credits first), with totals. Authorize first. */
  async ofUser(companyId: string, userId: string, since: Date): Promise<UsageSummary> {
    const rows: { model: string; credits: number | null; tokens: number | null; requests: number; cost: number | null }[] = await currentEm(this.orm)
      .createQueryBuilder(UsageRecord)
      .select(['model', raw('sum(credits) as credits'), raw('sum(tokens) as tokens'), raw('count(*) as requests'), raw('sum(cost_micros) as cost')])
      .where({ companyId, userId, createdAt: { $gte: since } })
      .groupBy('model')
      .execute('all', false);
    const items = rows
      .map((r) => {
        const costMicros = Number(r.cost ?? 0);
        return { model: r.model, credits: Number(r.credits ?? 0), tokens: Number(r.tokens ?? 0), requests: Number(r.requests), costMicros, cost: formatMicros(costMicros) };
      })
      .sort((a, b) => b.credits - a.credits || a.model.localeCompare(b.model));
    const sums = items.reduce(
      (sum, r) => ({ credits: sum.credits + r.credits, tokens: sum.tokens + r.tokens, requests: sum.requests + r.requests, costMicros: sum.costMicros + r.costMicros }),
      { credits: 0, tokens: 0, requests: 0, costMicros: 0 },
    );
    return { items, totals: { ...sums, cost: formatMicros(sums.costMicros) } };
  }

  /**
   * The company's usage over the last `days` days, grouped, with totals:
   * its owners, admins and keys, or any company for a superadmin. Groups
   * by day are oldest first; the others most credits first.
   */
  report(principal: Principal, query: UsageQuery, now = new Date()): UsageReport {
    const scope = this.scope(principal, query, now);
    const rows = this.groups(scope, 0, -1);
    const totals = rows.reduce(
      (sum, r) => ({ requests: sum.requests + r.requests, tokens: sum.tokens + r.tokens, credits: sum.credits + r.credits, costMicros: sum.costMicros + r.costMicros }),
      { requests: 0, tokens: 0, credits: 0, costMicros: 0 },
    );
    return { ...scope, currency: this.ledger.currency, rows, totals: { ...totals, cost: formatMicros(totals.costMicros) } };
  }

  /**
   * The same report for a CSV export: checked at once (so a refusal is a
   * problem, not a broken download), then read lazily, a chunk of groups per
   * statement, so a long report is never held in memory whole.
   */
  exportRows(principal: Principal, query: UsageQuery, now = new Date()): { scope: Omit<UsageReport, 'rows' | 'totals'>; chunks: () => Generator<UsageRow[]> } {
    const scope = this.scope(principal, query, now);
    const groups = (offset: number) => this.groups(scope, offset, EXPORT_CHUNK);
    return {
      scope: { ...scope, currency: this.ledger.currency },
      chunks: function* () {
        for (let offset = 0; ; offset += EXPORT_CHUNK) {
          const chunk = groups(offset);
          if (chunk.length) yield chunk;
          if (chunk.length < EXPORT_CHUNK) return;
        }
      },
    };
  }

  private scope(principal: Principal, query: UsageQuery, now: Date) {
    const companyId = this.ledger.readableCompany(principal, query.companyId, true);
    const issues: ValidationIssue[] = [];
    const groupBy = (query.groupBy ?? 'model') as UsageGroup;
    if (!usageGroups.includes(groupBy)) issues.push({ loc: ['query', 'group_by'], msg: `must be one of ${usageGroups.join(', ')}`, type: 'enum' });
    const days = query.days ?? USAGE_DAYS_DEFAULT;
    if (!Number.isInteger(days) || days < 1 || days > USAGE_DAYS_MAX) {
      issues.push({ loc: ['query', 'days'], msg: `must be an integer from 1 to ${USAGE_DAYS_MAX}`, type: 'range' });
    }
    if (issues.length) throw AppError.validation(issues);
    return { companyId, groupBy, days, since: new Date(+now - days * DAY_MS) };
  }

  private groups(scope: { companyId: string; groupBy: UsageGroup; since: Date }, offset: number, limit: number): UsageRow[] {
    const key = GROUP_SQL[scope.groupBy];
    const order = scope.groupBy === 'day' ? 'k asc' : 'credits desc, k asc';
    const rows = this.reads.all<GroupRow>(
      `select ${key} as k, count(*) as requests, sum(tokens) as tokens, sum(credits) as credits, sum(cost_micros) as cost
         from usage_records where company_id = ? and created_at >= ? group by ${key} order by ${order} limit ? offset ?`,
      scope.companyId,
      +scope.since,
      limit,
      offset,
    );
    return rows.map((r) => {
      const costMicros = Number(r.cost ?? 0);
      return {
        key: r.k === null ? null : scope.groupBy === 'day' ? new Date(Number(r.k) * DAY_MS).toISOString().slice(0, 10) : String(r.k),
        requests: Number(r.requests),
        tokens: Number(r.tokens ?? 0),
        credits: Number(r.credits ?? 0),
        costMicros,
        cost: formatMicros(costMicros),
      };
    });
  }
}

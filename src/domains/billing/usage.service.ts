import { raw } from '@mikro-orm/core';
import type { Orm } from '../../db/orm';
import { currentEm } from '../../db/unit-of-work';
import { UsageRecord } from './usage-record.entity';

export interface UsageByModel {
  model: string;
  credits: number;
  tokens: number;
  requests: number;
}

export interface UsageSummary {
  items: UsageByModel[];
  totals: { credits: number; tokens: number; requests: number };
}

/** Metered use of models, as the usage reports read it. */
export class UsageService {
  constructor(private readonly orm: Orm) {}

  /** A user's usage in a company since `since`, by model (most credits first), with totals. Authorize first. */
  async ofUser(companyId: string, userId: string, since: Date): Promise<UsageSummary> {
    const rows: { model: string; credits: number | null; tokens: number | null; requests: number }[] = await currentEm(this.orm)
      .createQueryBuilder(UsageRecord)
      .select(['model', raw('sum(credits) as credits'), raw('sum(tokens) as tokens'), raw('count(*) as requests')])
      .where({ companyId, userId, createdAt: { $gte: since } })
      .groupBy('model')
      .execute('all', false);
    const items = rows
      .map((r) => ({ model: r.model, credits: Number(r.credits ?? 0), tokens: Number(r.tokens ?? 0), requests: Number(r.requests) }))
      .sort((a, b) => b.credits - a.credits || a.model.localeCompare(b.model));
    const totals = items.reduce(
      (sum, r) => ({ credits: sum.credits + r.credits, tokens: sum.tokens + r.tokens, requests: sum.requests + r.requests }),
      { credits: 0, tokens: 0, requests: 0 },
    );
    return { items, totals };
  }
}

import type { Orm } from '../../db/orm';
import type { ReadStore } from '../../db/read-store';
import { VersionedCache, type ChangeSignal } from '../../db/change-signal';
import { currentEm } from '../../db/unit-of-work';
import { Plan } from './plan.entity';

/** What a plan is to its readers: id, name and the monthly credit allocation. */
export interface PlanView {
  id: string;
  name: string;
  monthlyCredits: number;
  dailyRequests: number;
}

interface PlanRow {
  id: string;
  name: string;
  monthly_credits: number;
  daily_requests: number;
}

/** An entry of data/plans.json. */
export interface PlanSeed {
  id: string;
  name: string;
  monthly_credits: number;
  daily_requests: number;
}

/** The plan catalog: what each plan offers. Which plan a company is on is the company's record. */
export class PlanService {
  /** Plans by id, until the next write to the database. */
  private readonly byId: VersionedCache<PlanView | null>;

  constructor(
    private readonly orm: Orm,
    private readonly reads: ReadStore,
    changes: ChangeSignal,
  ) {
    this.byId = new VersionedCache(changes);
  }

  async list(): Promise<Plan[]> {
    return currentEm(this.orm).find(Plan, {}, { orderBy: { monthlyCredits: 'asc' } });
  }

  /** One plan, from memory while the database is unchanged (the profile's hot path); null when unknown. */
  plan(id: string): PlanView | null {
    return this.byId.get(id, () => {
      const row = this.reads.get<PlanRow>('select id, name, monthly_credits, daily_requests from plans where id = ?', id);
      return row ? { id: row.id, name: row.name, monthlyCredits: row.monthly_credits, dailyRequests: row.daily_requests } : null;
    });
  }

  /** The plan when memory has it (null: no such plan); undefined when it needs a read. */
  cachedPlan(id: string): PlanView | null | undefined {
    return this.byId.peek(id);
  }

  /** Plans by id, for a request's batch loader (each id read once per request, whatever the cache does). */
  async plansByIds(ids: readonly string[]): Promise<(PlanView | null)[]> {
    return ids.map((id) => this.plan(id));
  }

  exists(id: string): boolean {
    return this.plan(id) !== null;
  }

  async seed(plans: PlanSeed[]): Promise<number> {
    const em = currentEm(this.orm);
    const existing = new Map((await em.find(Plan, {})).map((p) => [p.id, p]));
    const missing = plans.filter((p) => !existing.has(p.id));
    for (const p of missing) em.create(Plan, { id: p.id, name: p.name, monthlyCredits: p.monthly_credits, dailyRequests: p.daily_requests });
    // A limit the seed has and a plan lacks (0, as plans had before daily limits) is filled in.
    for (const p of plans) {
      const stored = existing.get(p.id);
      if (stored && stored.dailyRequests === 0) stored.dailyRequests = p.daily_requests;
    }
    await em.flush();
    return missing.length;
  }
}

import type { Orm } from '../../db/orm';
import { VersionedCache, type ReadStore } from '../../db/read-store';
import { Plan } from './plan.entity';
import { currentEm } from '../../db/unit-of-work';

interface PlanRow {
  company_id: string;
  id: string;
  name: string;
  monthly_credits: number;
}

const PLAN_SELECT =
  'select c.id as company_id, p.id, p.name, p.monthly_credits from companies c join plans p on p.id = c.plan_id';

export interface PlanSeed {
  id: string;
  name: string;
  monthly_credits: number;
}

export class PlanService {
  /** Each company's plan, until the next write to the database. */
  private readonly byCompany: VersionedCache<Plan | null>;

  constructor(
    private readonly orm: Orm,
    private readonly reads: ReadStore,
  ) {
    this.byCompany = new VersionedCache(reads);
  }

  async list(): Promise<Plan[]> {
    return currentEm(this.orm).find(Plan, {}, { orderBy: { monthlyCredits: 'asc' } });
  }

  /** The company's plan when it is cached and current (null: it has none); undefined when it needs a read. */
  cachedPlanOf(companyId: string): Plan | null | undefined {
    return this.byCompany.peek(companyId);
  }

  /** The plan of each company, in order; one prepared statement for the whole batch. */
  async plansForCompanies(companyIds: readonly string[]): Promise<(Plan | null)[]> {
    // The usual batch is one company (the caller's): cached, and a plain equality is cheaper than json_each.
    if (companyIds.length === 1) {
      const id = companyIds[0]!;
      return [this.byCompany.get(id, () => planOf(this.reads.get<PlanRow>(`${PLAN_SELECT} where c.id = ?`, id)))];
    }
    const rows = this.reads.all<PlanRow>(`${PLAN_SELECT} where c.id in (select value from json_each(?))`, JSON.stringify(companyIds));
    const byCompany = new Map(rows.map((r) => [r.company_id, planOf(r)]));
    return companyIds.map((id) => byCompany.get(id) ?? null);
  }

  async seed(plans: PlanSeed[]): Promise<number> {
    const em = currentEm(this.orm);
    const existing = new Set((await em.find(Plan, {})).map((p) => p.id));
    const missing = plans.filter((p) => !existing.has(p.id));
    for (const p of missing) em.create(Plan, { id: p.id, name: p.name, monthlyCredits: p.monthly_credits });
    await em.flush();
    return missing.length;
  }
}

function planOf(row: PlanRow | undefined): Plan | null {
  return row ? ({ id: row.id, name: row.name, monthlyCredits: row.monthly_credits } as Plan) : null;
}

import type { Orm } from '../../db/orm';
import { Company } from '../identity/company.entity';
import { Plan } from './plan.entity';
import { currentEm } from '../../db/unit-of-work';

export interface PlanSeed {
  id: string;
  name: string;
  monthly_credits: number;
}

export class PlanService {
  constructor(private readonly orm: Orm) {}

  async list(): Promise<Plan[]> {
    return currentEm(this.orm).find(Plan, {}, { orderBy: { monthlyCredits: 'asc' } });
  }

  /** The plan of each company, in order; one query for the whole batch. */
  async plansForCompanies(companyIds: readonly string[]): Promise<(Plan | null)[]> {
    const em = currentEm(this.orm);
    const companies = await em.find(Company, { id: { $in: [...companyIds] } }, { fields: ['id', 'planId'] });
    const planIds = [...new Set(companies.map((c) => c.planId))];
    const plans = await em.find(Plan, { id: { $in: planIds } });
    const planById = new Map(plans.map((p) => [p.id, p]));
    const planByCompany = new Map(companies.map((c) => [c.id, planById.get(c.planId) ?? null]));
    return companyIds.map((id) => planByCompany.get(id) ?? null);
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

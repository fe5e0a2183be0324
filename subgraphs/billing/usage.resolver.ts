import { Arg, Ctx, Field, ID, Int, ObjectType, Query, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, UUID } from '../rest';
import type { GraphQLContext } from '../context';
import { MONEY_PATTERN } from './credits.types';
import { USAGE_DAYS_DEFAULT, USAGE_DAYS_MAX, usageGroups, type BillingApi, type UsageRow, type UsageService } from '../../src/domains/billing';
import type { CatalogApi, CatalogService } from '../../src/domains/catalog';
import type { IdentityApi, IdentityService } from '../../src/domains/identity';


@ObjectType('UsageTotals')
export class UsageTotalsType {
  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'Metered uses' })
  requests!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int)
  tokens!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int)
  credits!: number;

  @Rest({ pattern: MONEY_PATTERN })
  @Field(() => String, { description: "Currency cost at the models' prices, decimal" })
  cost!: string;
}

@ObjectType('UsageGroup', { description: 'One group of a usage report' })
export class UsageGroupType extends UsageTotalsType {
  @Field(() => String, { nullable: true, description: "The model id, user id, feature, API key id or UTC day (YYYY-MM-DD); null: none (a key's use has no user)" })
  key!: string | null;

  @Field(() => String, { nullable: true, description: "A name for the key: the model's display name or the user's email" })
  label!: string | null;
}

@ObjectType('UsageReport', { description: "A company's metered usage over the last days, grouped, with totals" })
export class UsageReportType {
  @Rest({ enum: usageGroups })
  @Field(() => String)
  groupBy!: string;

  @Rest({ minimum: 1, maximum: USAGE_DAYS_MAX })
  @Field(() => Int)
  days!: number;

  @Field({ description: 'Start of the period (now minus days)' })
  since!: Date;

  @Field(() => String)
  currency!: string;

  @Field(() => [UsageGroupType], { description: 'Most credits first; by day, oldest first' })
  rows!: UsageGroupType[];

  @Field(() => UsageTotalsType)
  totals!: UsageTotalsType;
}

/** Usage reports: thin over the billing domain's UsageService; labels come from the catalog and identity. */
@Resolver()
export class UsageResolver {
  static from = ({ billing, catalog, identity }: { billing: BillingApi; catalog: CatalogApi; identity: IdentityApi }) =>
    new UsageResolver(billing.usage, catalog.models, identity.accounts);

  private readonly usersByIds = (ids: readonly string[]) => this.accounts.usersByIds(ids);

  constructor(
    private readonly usage: UsageService,
    private readonly models: CatalogService,
    private readonly accounts: IdentityService,
  ) {}

  @Access({ auth: 'authenticated' })
  @RestArgs({ days: { minimum: 1, maximum: USAGE_DAYS_MAX }, companyId: UUID })
  @Query(() => UsageReportType, {
    description: `The company's usage over the last days (1 to ${USAGE_DAYS_MAX}, default ${USAGE_DAYS_DEFAULT}), grouped by ${usageGroups.join(', ')} (default model). Owners, admins and keys; superadmins may name another company.`,
  })
  async usageReport(
    @Ctx() ctx: GraphQLContext,
    @Arg('groupBy', () => String, { nullable: true, defaultValue: 'model' }) groupBy: string,
    @Arg('days', () => Int, { nullable: true, defaultValue: USAGE_DAYS_DEFAULT }) days: number,
    @Arg('companyId', () => ID, { nullable: true }) companyId?: string | null,
  ) {
    const report = this.usage.report(ctx.principal, { groupBy, days, companyId });
    return { ...report, rows: await this.labelled(report.groupBy, report.rows, ctx) };
  }

  /** Labels for a report's keys (the CSV export uses the same). */
  async labelled(groupBy: string, rows: UsageRow[], ctx: GraphQLContext) {
    if (groupBy === 'model') return rows.map((r) => ({ ...r, label: r.key ? (this.models.anyModel(r.key)?.displayName ?? null) : null }));
    if (groupBy === 'user') {
      const users = await Promise.all(rows.map((r) => (r.key ? ctx.loaders.of(this.usersByIds).load(r.key) : null)));
      return rows.map((r, i) => ({ ...r, label: users[i]?.email ?? null }));
    }
    return rows.map((r) => ({ ...r, label: null }));
  }
}

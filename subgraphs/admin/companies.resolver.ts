import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, UUID } from '../rest';
import { DISPLAY_NAME_MAX } from '../../src/errors/display-name';
import { checkPage } from '../../src/pagination';
import { COMPANIES_PER_PAGE, COMPANY_AUDIT_PER_PAGE, type CompanyAdminService, type IdentityApi } from '../../src/domains/identity';
import type { GraphQLContext } from '../context';
import { PageType, PAGE_BOUNDS } from '../page';
import { AUDIT_ACTION_BOUNDS, AuditEventPageType, AuditEventType } from './types';


@ObjectType('AdminCompany', { description: 'A company as its administrators (and platform superadmins) see it' })
export class AdminCompanyType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field({ description: 'The billing plan id' })
  planId!: string;

  @Field()
  createdAt!: Date;
}

export const AdminCompanyPageType = PageType(AdminCompanyType, 'AdminCompanyPage');

@InputType('CompanyPatchInput', { description: 'Fields to change; omitted or null fields stay as they are' })
export class CompanyPatchInput {
  @Rest({ minLength: 1, maxLength: DISPLAY_NAME_MAX })
  @Field(() => String, { nullable: true, description: `1 to ${DISPLAY_NAME_MAX} characters, without control or bidirectional formatting characters` })
  name?: string | null;

  @Rest({ minLength: 1, maxLength: 64 })
  @Field(() => String, { nullable: true, description: 'An existing plan id; platform superadmins only' })
  planId?: string | null;
}

@ObjectType('UserStatusCounts')
export class UserStatusCountsType {
  @Rest({ minimum: 0 })
  @Field(() => Int)
  active!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int)
  suspended!: number;
}

@ObjectType('UserRoleCounts')
export class UserRoleCountsType {
  @Rest({ minimum: 0 })
  @Field(() => Int)
  owner!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int)
  admin!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int)
  member!: number;
}

@ObjectType('UserCounts')
export class UserCountsType {
  @Rest({ minimum: 0 })
  @Field(() => Int)
  total!: number;

  @Field(() => UserStatusCountsType)
  byStatus!: UserStatusCountsType;

  @Field(() => UserRoleCountsType)
  byRole!: UserRoleCountsType;
}

@ObjectType('AdminOverview', { description: 'Counts of one company for the administration dashboard' })
export class AdminOverviewType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  companyId!: string;

  @Field(() => UserCountsType)
  users!: UserCountsType;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'Invitations pending and not yet expired' })
  pendingInvitations!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'Sessions neither revoked nor expired' })
  activeSessions!: number;

  @Rest({ minimum: 0 })
  @Field(() => Int, { description: 'API keys not revoked' })
  activeApiKeys!: number;

  @Field(() => [AuditEventType], { description: 'The last 10 audited auth.*, mfa.*, session.* and api_key.* actions, newest first' })
  recentSecurityEvents!: AuditEventType[];
}

@Resolver()
export class CompanyAdminResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new CompanyAdminResolver(identity.companies);

  constructor(private readonly companies: CompanyAdminService) {}

  @Access({ auth: 'authenticated' })
  @RestArgs({ ...PAGE_BOUNDS, q: { maxLength: 200 } })
  @Query(() => AdminCompanyPageType, {
    description:
      'Companies by name, case-insensitively (q: name contains, case-insensitive). Owners, admins and API keys see only their own ' +
      'company; platform superadmins see every company.',
  })
  adminCompanies(
    @Ctx() ctx: GraphQLContext,
    @Arg('q', () => String, { nullable: true }) q: string | null,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: COMPANIES_PER_PAGE }) perPage: number,
  ) {
    return this.companies.list(ctx.principal, { q, ...checkPage(page, perPage) });
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ id: UUID })
  @Query(() => AdminCompanyType, { description: "One company; another company's id is not_found unless the caller is a superadmin" })
  adminCompany(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return this.companies.get(ctx.principal, id);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ id: UUID })
  @Mutation(() => AdminCompanyType, {
    description: "Renames a company (another company's name, ignoring case and surrounding spaces, is conflict); planId may be changed by a platform superadmin only (forbidden otherwise). Audited company.updated.",
  })
  updateCompany(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => CompanyPatchInput) input: CompanyPatchInput,
    @Ctx() ctx: GraphQLContext,
  ) {
    return this.companies.update(ctx.principal, id, input, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ ...PAGE_BOUNDS, action: AUDIT_ACTION_BOUNDS, actor: { minLength: 1, maxLength: 320 }, companyId: UUID })
  @Query(() => AuditEventPageType, {
    description: "A company's audit log, newest first; action filters by exact action, actor by actor id or label (email or key name)",
  })
  companyAuditLog(
    @Ctx() ctx: GraphQLContext,
    @Arg('companyId', () => ID) companyId: string,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: COMPANY_AUDIT_PER_PAGE }) perPage: number,
    @Arg('action', () => String, { nullable: true }) action: string | null,
    @Arg('actor', () => String, { nullable: true }) actor: string | null,
  ) {
    return this.companies.auditLog(ctx.principal, companyId, { ...checkPage(page, perPage), action, actor });
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
  @Query(() => AdminOverviewType, {
    description: "Counts of the caller's company (a superadmin: of companyId): users, invitations, sessions, keys, security events",
  })
  adminOverview(
    @Ctx() ctx: GraphQLContext,
    @Arg('companyId', () => ID, { nullable: true, description: 'Superadmins only; an unknown company is not_found' }) companyId?: string | null,
  ) {
    return this.companies.overview(ctx.principal, companyId);
  }
}

import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, UUID } from '../rest';
import {
  ADMIN_USERS_PER_PAGE,
  SESSIONS_PER_PAGE,
  SUSPEND_REASON_MAX,
  USAGE_DAYS_DEFAULT,
  USAGE_DAYS_MAX,
  type AdminUserPatch,
  type IdentityApi,
  type IdentityService,
  type User,
  type UserAdminService,
} from '../../src/domains/identity';
import type { GraphQLContext } from '../context';
import { RoleValue } from '../shared/role';
import { UserStatusValue } from '../shared/user-status';
import {
  AdminForceLogoutType,
  AdminPasswordResetType,
  AdminUserCompanyType,
  AdminUserPageType,
  AdminUserPatchInput,
  AdminUserSessionPageType,
  AdminUserType,
  AdminUserUsageType,
} from './admin-users.types';
import { PAGE_BOUNDS } from '../page';

const WHO =
  "Owners and admins of the user's company, its API keys and superadmins (any company); a member is forbidden, " +
  'a user of another company not_found.';

/** GraphQL null for role or status is not "unchanged": it fails validation like any other non-value. */
function toPatch(input: AdminUserPatchInput): AdminUserPatch {
  return {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.role !== undefined ? { role: input.role ?? '' } : {}),
    ...(input.status !== undefined ? { status: input.status ?? '' } : {}),
  };
}

@Resolver(() => AdminUserType)
export class AdminUsersResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new AdminUsersResolver(identity.users, identity.accounts);

  private readonly companiesByIds = (ids: readonly string[]) => this.accounts.companiesByIds(ids);
  private readonly activeSessionCounts = (ids: readonly string[]) => this.users.activeSessionCounts(ids);

  constructor(
    private readonly users: UserAdminService,
    private readonly accounts: IdentityService,
  ) {}

  @Access({ auth: 'authenticated' })
  @RestArgs({ ...PAGE_BOUNDS, q: { maxLength: 320 }, companyId: UUID })
  @Query(() => AdminUserPageType, {
    description:
      "The users of the caller's company (a superadmin: every company, or companyId). q matches email or name " +
      '(contains, case-insensitive); sort is created_at, email, name (case-insensitively), role, status or last_login_at, - for descending. ' +
      WHO,
  })
  adminUsers(
    @Ctx() ctx: GraphQLContext,
    @Arg('q', () => String, { nullable: true }) q?: string | null,
    @Arg('role', () => RoleValue, { nullable: true }) role?: RoleValue | null,
    @Arg('status', () => UserStatusValue, { nullable: true }) status?: UserStatusValue | null,
    @Arg('sort', () => String, { defaultValue: 'created_at' }) sort?: string,
    @Arg('page', () => Int, { defaultValue: 1 }) page?: number,
    @Arg('perPage', () => Int, { defaultValue: ADMIN_USERS_PER_PAGE }) perPage?: number,
    @Arg('companyId', () => ID, { nullable: true, description: 'Superadmins only' }) companyId?: string | null,
  ) {
    return this.users.list(ctx.principal, { q, role, status, sort, page: page!, perPage: perPage!, companyId });
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ userId: UUID })
  @Query(() => AdminUserType, { description: `One user. ${WHO}` })
  adminUser(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return this.users.get(ctx.principal, userId);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ ...PAGE_BOUNDS, userId: UUID })
  @Query(() => AdminUserSessionPageType, { description: `A user's active sessions, newest first. ${WHO}` })
  adminUserSessions(
    @Arg('userId', () => ID) userId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: SESSIONS_PER_PAGE }) perPage: number,
  ) {
    return this.users.sessionsOf(ctx.principal, userId, { page, perPage });
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ days: { minimum: 1, maximum: USAGE_DAYS_MAX }, userId: UUID })
  @Query(() => AdminUserUsageType, { description: `A user's usage over the last days (1 to 365), by model, with totals. ${WHO}` })
  adminUserUsage(
    @Arg('userId', () => ID) userId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('days', () => Int, { defaultValue: USAGE_DAYS_DEFAULT }) days: number,
  ) {
    return this.users.usageOf(ctx.principal, userId, days);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ userId: UUID })
  @Mutation(() => AdminUserType, {
    description: `Changes a user's name, role or status; audited user.updated with the changed fields. ${WHO}`,
  })
  updateAdminUser(@Arg('userId', () => ID) userId: string, @Arg('input', () => AdminUserPatchInput) input: AdminUserPatchInput, @Ctx() ctx: GraphQLContext) {
    return this.users.update(ctx.principal, userId, toPatch(input), ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ userId: UUID })
  @Mutation(() => Boolean, {
    description: `Deletes a user; their sessions and the API keys they created end at once. Audited user.deleted. ${WHO}`,
  })
  async deleteAdminUser(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    await this.users.delete(ctx.principal, userId, ctx.meta);
    return true;
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ reason: { minLength: 1, maxLength: SUSPEND_REASON_MAX }, userId: UUID })
  @Mutation(() => AdminUserType, { description: `Suspends a user (reason 1 to 500 characters); every session ends at once. ${WHO}` })
  suspendUser(@Arg('userId', () => ID) userId: string, @Arg('reason') reason: string, @Ctx() ctx: GraphQLContext) {
    return this.users.suspend(ctx.principal, userId, reason, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ userId: UUID })
  @Mutation(() => AdminUserType, { description: `Lets a suspended user sign in again and clears their failed-login count. ${WHO}` })
  unsuspendUser(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return this.users.unsuspend(ctx.principal, userId, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ userId: UUID })
  @Mutation(() => AdminPasswordResetType, { description: `Mails the user a password reset link. ${WHO}` })
  sendUserPasswordReset(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return this.users.resetPassword(ctx.principal, userId, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ userId: UUID })
  @Mutation(() => AdminForceLogoutType, { description: `Ends every session of the user at once. ${WHO}` })
  forceLogoutUser(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return this.users.forceLogout(ctx.principal, userId, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ userId: UUID })
  @Mutation(() => AdminUserType, { description: `Turns a user's MFA off (the user is told by mail). ${WHO}` })
  disableUserMfa(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return this.users.disableMfa(ctx.principal, userId, ctx.meta);
  }

  @Rest({ format: 'uuid' })
  @FieldResolver(() => ID)
  companyId(@Root() user: User): string {
    return user.company.id;
  }

  @FieldResolver(() => AdminUserCompanyType, { description: 'Batched per request' })
  async company(@Root() user: User, @Ctx() ctx: GraphQLContext): Promise<AdminUserCompanyType> {
    const company = await ctx.loaders.of(this.companiesByIds).load(user.company.id);
    return { id: user.company.id, name: company?.name ?? '' };
  }

  @Rest({ description: 'Sessions neither revoked nor expired' })
  @FieldResolver(() => Int, { description: 'Sessions neither revoked nor expired; batched per request' })
  activeSessionCount(@Root() user: User, @Ctx() ctx: GraphQLContext): Promise<number> {
    return ctx.loaders.of(this.activeSessionCounts).load(user.id);
  }
}

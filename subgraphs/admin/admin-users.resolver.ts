import DataLoader from 'dataloader';
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { ADMIN_USERS_PER_PAGE, USAGE_DAYS_DEFAULT, type AdminUserPatch } from '../../src/domains/admin/admin-users.service';
import { SESSIONS_PER_PAGE } from '../../src/domains/identity/session.service';
import type { User } from '../../src/domains/identity/user.entity';
import type { GraphQLContext, Loaders } from '../context';
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

const WHO =
  "Owners and admins of the user's company, its API keys and superadmins (any company); a member is forbidden, " +
  'a user of another company not_found.';

/** Per-request batch of active-session counts, kept with the request's other loaders. */
const sessionCountLoaders = new WeakMap<Loaders, DataLoader<string, number>>();
function activeSessionCountLoader(ctx: GraphQLContext): DataLoader<string, number> {
  let loader = sessionCountLoaders.get(ctx.loaders);
  if (!loader) {
    loader = ctx.loaders.create((ids: readonly string[]) => ctx.services.adminUsers.activeSessionCounts(ids));
    sessionCountLoaders.set(ctx.loaders, loader);
  }
  return loader;
}

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
  @Query(() => AdminUserPageType, {
    description:
      "The users of the caller's company (a superadmin: every company, or companyId). q matches email or name " +
      '(contains, case-insensitive); sort is created_at, email, name, role, status or last_login_at, - for descending. ' +
      WHO,
  })
  adminUsers(
    @Ctx() ctx: GraphQLContext,
    @Arg('q', () => String, { nullable: true }) q?: string | null,
    @Arg('role', () => String, { nullable: true }) role?: string | null,
    @Arg('status', () => String, { nullable: true }) status?: string | null,
    @Arg('sort', () => String, { defaultValue: 'created_at' }) sort?: string,
    @Arg('page', () => Int, { defaultValue: 1 }) page?: number,
    @Arg('perPage', () => Int, { defaultValue: ADMIN_USERS_PER_PAGE }) perPage?: number,
    @Arg('companyId', () => ID, { nullable: true, description: 'Superadmins only' }) companyId?: string | null,
  ) {
    return ctx.services.adminUsers.list(ctx.principal, { q, role, status, sort, page: page!, perPage: perPage!, companyId });
  }

  @Query(() => AdminUserType, { description: `One user. ${WHO}` })
  adminUser(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.adminUsers.get(ctx.principal, userId);
  }

  @Query(() => AdminUserSessionPageType, { description: `A user's active sessions, newest first. ${WHO}` })
  adminUserSessions(
    @Arg('userId', () => ID) userId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: SESSIONS_PER_PAGE }) perPage: number,
  ) {
    return ctx.services.adminUsers.sessionsOf(ctx.principal, userId, { page, perPage });
  }

  @Query(() => AdminUserUsageType, { description: `A user's usage over the last days (1 to 365), by model, with totals. ${WHO}` })
  adminUserUsage(
    @Arg('userId', () => ID) userId: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('days', () => Int, { defaultValue: USAGE_DAYS_DEFAULT }) days: number,
  ) {
    return ctx.services.adminUsers.usageOf(ctx.principal, userId, days);
  }

  @Mutation(() => AdminUserType, {
    description: `Changes a user's name, role or status; audited user.updated with the changed fields. ${WHO}`,
  })
  updateAdminUser(@Arg('userId', () => ID) userId: string, @Arg('input', () => AdminUserPatchInput) input: AdminUserPatchInput, @Ctx() ctx: GraphQLContext) {
    return ctx.services.adminUsers.update(ctx.principal, userId, toPatch(input), ctx.meta);
  }

  @Mutation(() => Boolean, {
    description: `Deletes a user; their sessions and the API keys they created end at once. Audited user.deleted. ${WHO}`,
  })
  async deleteAdminUser(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    await ctx.services.adminUsers.delete(ctx.principal, userId, ctx.meta);
    return true;
  }

  @Mutation(() => AdminUserType, { description: `Suspends a user (reason 1 to 500 characters); every session ends at once. ${WHO}` })
  suspendUser(@Arg('userId', () => ID) userId: string, @Arg('reason') reason: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.adminUsers.suspend(ctx.principal, userId, reason, ctx.meta);
  }

  @Mutation(() => AdminUserType, { description: `Lets a suspended user sign in again and clears their failed-login count. ${WHO}` })
  unsuspendUser(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.adminUsers.unsuspend(ctx.principal, userId, ctx.meta);
  }

  @Mutation(() => AdminPasswordResetType, { description: `Mails the user a password reset link. ${WHO}` })
  sendUserPasswordReset(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.adminUsers.resetPassword(ctx.principal, userId, ctx.meta);
  }

  @Mutation(() => AdminForceLogoutType, { description: `Ends every session of the user at once. ${WHO}` })
  forceLogoutUser(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.adminUsers.forceLogout(ctx.principal, userId, ctx.meta);
  }

  @Mutation(() => AdminUserType, { description: `Turns a user's MFA off (the user is told by mail). ${WHO}` })
  disableUserMfa(@Arg('userId', () => ID) userId: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.adminUsers.disableMfa(ctx.principal, userId, ctx.meta);
  }

  @FieldResolver(() => ID)
  companyId(@Root() user: User): string {
    return user.company.id;
  }

  @FieldResolver(() => AdminUserCompanyType, { description: 'Batched per request' })
  async company(@Root() user: User, @Ctx() ctx: GraphQLContext): Promise<AdminUserCompanyType> {
    const company = await ctx.loaders.companyById.load(user.company.id);
    return { id: user.company.id, name: company?.name ?? '' };
  }

  @FieldResolver(() => Int, { description: 'Sessions neither revoked nor expired; batched per request' })
  activeSessionCount(@Root() user: User, @Ctx() ctx: GraphQLContext): Promise<number> {
    return activeSessionCountLoader(ctx).load(user.id);
  }
}

import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { checkPage } from '../../src/pagination';
import type { GraphQLContext } from '../context';
import { SESSION_COOKIE } from './identity.resolver';
import { SESSIONS_PER_PAGE, type IdentityApi, type SessionService } from '../../src/domains/identity';
import { SessionPageType } from './session.types';
import { RestArgs, UUID } from '../rest';
import { PAGE_BOUNDS } from '../page';

@Resolver()
export class SessionResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new SessionResolver(identity.sessions);

  constructor(private readonly sessions: SessionService) {}

  @Access({ auth: 'authenticated' })
  @RestArgs(PAGE_BOUNDS)
  @Query(() => SessionPageType, {
    description: "The caller's active sessions, newest first; `current` marks this request's own. " +
      'Signed-in users only: a company API key has no sessions (forbidden).',
  })
  mySessions(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: SESSIONS_PER_PAGE }) perPage: number,
  ) {
    return this.sessions.list(ctx.principal, checkPage(page, perPage));
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ id: UUID })
  @Mutation(() => Boolean, {
    description:
      "Ends one of the caller's active sessions at once (its access tokens, refresh token and subscriptions). " +
      'An id that is not an active session of the caller answers not_found.',
  })
  async revokeSession(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    await this.sessions.revoke(ctx.principal, id, ctx.meta);
    if (ctx.principal.kind === 'user' && id === ctx.principal.sessionId) ctx.transport?.clearCookie(SESSION_COOKIE);
    return true;
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => Int, {
    description: "Ends every active session of the caller, this one included; returns how many were ended",
  })
  async revokeAllSessions(@Ctx() ctx: GraphQLContext) {
    const count = await this.sessions.revokeAll(ctx.principal, ctx.meta);
    ctx.transport?.clearCookie(SESSION_COOKIE);
    return count;
  }
}

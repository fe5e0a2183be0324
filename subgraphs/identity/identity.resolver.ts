import { Arg, Ctx, FieldResolver, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Access } from '../policy/access';
import type { GraphQLContext } from '../context';
import type { AuthService, IdentityApi, IdentityService, User } from '../../src/domains/identity';
import { AuthPayloadType, CompanyType, LoginInput, RefreshTokenInput, TokenPairType, UserType, ViewerType } from './types';

/** The session cookie set by single sign-on; logout clears it. */
export const SESSION_COOKIE = 'service_token';

@Resolver()
export class AuthResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new AuthResolver(identity.accounts, identity.auth);

  constructor(
    private readonly accounts: IdentityService,
    private readonly auth: AuthService,
  ) {}

  @Access({ auth: 'authenticated', duringMfaEnrollment: true })
  @Query(() => ViewerType, { description: 'The caller: user and company, or the API key' })
  me(@Ctx() ctx: GraphQLContext) {
    return this.accounts.viewer(ctx.principal);
  }

  @Access({ auth: 'public', rateLimit: 'auth' })
  @Mutation(() => AuthPayloadType, { description: 'Email and password sign-in' })
  login(@Arg('input', () => LoginInput) input: LoginInput, @Ctx() ctx: GraphQLContext) {
    return this.auth.login(input, ctx.meta);
  }

  @Access({ auth: 'public', rateLimit: 'auth' })
  @Mutation(() => TokenPairType, { description: 'Rotates a refresh token; the presented one stops working' })
  refreshToken(@Arg('input', () => RefreshTokenInput) input: RefreshTokenInput, @Ctx() ctx: GraphQLContext) {
    return this.auth.refresh(input.refreshToken, ctx.meta);
  }

  @Access({ auth: 'authenticated', rateLimit: 'auth', duringMfaEnrollment: true })
  @Mutation(() => Boolean, { description: "Ends the caller's session and clears the session cookie" })
  async logout(@Ctx() ctx: GraphQLContext) {
    await this.auth.logout(ctx.principal, ctx.meta);
    ctx.transport?.clearCookie(SESSION_COOKIE);
    return true;
  }
}

@Resolver(() => UserType)
export class UserResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new UserResolver(identity.accounts);

  /** Batch functions of the request's loaders (stable, so each request batches them once). */
  readonly companiesByIds = (ids: readonly string[]) => this.accounts.companiesByIds(ids);
  readonly usersByIds = (ids: readonly string[]) => this.accounts.usersByIds(ids);

  constructor(private readonly accounts: IdentityService) {}

  @FieldResolver(() => CompanyType)
  company(@Root() user: User, @Ctx() ctx: GraphQLContext) {
    return ctx.loaders.of(this.companiesByIds).load(user.company.id);
  }
}

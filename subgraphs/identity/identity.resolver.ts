import { Arg, Ctx, FieldResolver, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { GraphQLContext } from '../context';
import type { User } from '../../src/domains/identity/user.entity';
import { AuthPayloadType, CompanyType, LoginInput, RefreshTokenInput, TokenPairType, UserType, ViewerType } from './types';

/** The session cookie set by single sign-on; logout clears it. */
export const SESSION_COOKIE = 'service_token';

@Resolver()
export class AuthResolver {
  @Query(() => ViewerType, { description: 'The caller: user and company, or the API key' })
  me(@Ctx() ctx: GraphQLContext) {
    return ctx.services.identity.viewer(ctx.principal);
  }

  @Mutation(() => AuthPayloadType, { description: 'Email and password sign-in' })
  login(@Arg('input', () => LoginInput) input: LoginInput, @Ctx() ctx: GraphQLContext) {
    return ctx.services.auth.login(input, ctx.meta);
  }

  @Mutation(() => TokenPairType, { description: 'Rotates a refresh token; the presented one stops working' })
  refreshToken(@Arg('input', () => RefreshTokenInput) input: RefreshTokenInput, @Ctx() ctx: GraphQLContext) {
    return ctx.services.auth.refresh(input.refreshToken, ctx.meta);
  }

  @Mutation(() => Boolean, { description: "Ends the caller's session and clears the session cookie" })
  async logout(@Ctx() ctx: GraphQLContext) {
    await ctx.services.auth.logout(ctx.principal, ctx.meta);
    ctx.transport?.clearCookie(SESSION_COOKIE);
    return true;
  }
}

@Resolver(() => UserType)
export class UserResolver {
  @FieldResolver(() => CompanyType)
  company(@Root() user: User, @Ctx() ctx: GraphQLContext) {
    return ctx.loaders.companyById.load(user.company.id);
  }
}

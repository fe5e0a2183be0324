import { Arg, Ctx, Field, FieldResolver, ID, InputType, Int, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, UUID } from '../rest';
import { checkPage } from '../../src/pagination';
import { API_KEYS_PER_PAGE, parseScopes, type ApiKey, type ApiKeyAdminService, type IdentityApi, type IdentityService } from '../../src/domains/identity';
import type { GraphQLContext } from '../context';
import { PageType, PAGE_BOUNDS } from '../page';
import { displayNameRule } from '../../src/errors/display-name';


@ObjectType('ApiKeyCreator', { description: 'The user who created an API key' })
export class ApiKeyCreatorType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field()
  email!: string;
}

@ObjectType('ApiKey', {
  description: "A company API key (svc_…) or a user's AI-modules key (sk_live_svc_…, with its owner and scopes); the key itself is shown only once, at creation",
})
export class ApiKeyType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field({ description: 'The first characters of the key, to tell keys apart' })
  prefix!: string;

  @Field()
  createdAt!: Date;

  @Field(() => Date, { nullable: true, description: 'Last request made with the key (updated at most about once a minute)' })
  lastUsedAt!: Date | null;
}

export const ApiKeyPageType = PageType(ApiKeyType, 'ApiKeyPage');

@ObjectType('CreatedApiKey')
export class CreatedApiKeyType {
  @Field(() => ApiKeyType)
  apiKey!: ApiKey;

  @Rest({ description: 'The plaintext key; shown once, never again' })
  @Field({ description: 'The plaintext key (svc_…); shown here once and never again' })
  key!: string;
}

@InputType('ApiKeyCreateInput')
export class ApiKeyCreateInput {
  @Rest({ minLength: 1, maxLength: 200 })
  @Field({ description: displayNameRule(200) })
  name!: string;
}

@Resolver(() => ApiKeyType)
export class ApiKeyAdminResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new ApiKeyAdminResolver(identity.apiKeyAdmin, identity.accounts);

  private readonly usersByIds = (ids: readonly string[]) => this.accounts.usersByIds(ids);

  constructor(
    private readonly keys: ApiKeyAdminService,
    private readonly accounts: IdentityService,
  ) {}

  @Access({ auth: 'authenticated' })
  @RestArgs(PAGE_BOUNDS)
  @Query(() => ApiKeyPageType, { description: "The caller's company's active API keys, newest first (owners, admins, API keys)" })
  apiKeys(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: API_KEYS_PER_PAGE }) perPage: number,
  ) {
    return this.keys.list(ctx.principal, checkPage(page, perPage));
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => CreatedApiKeyType, { description: 'Creates a company API key; the plaintext is returned once. Audited api_key.created.' })
  async createApiKey(@Arg('input', () => ApiKeyCreateInput) input: ApiKeyCreateInput, @Ctx() ctx: GraphQLContext) {
    const { apiKey, plaintext } = await this.keys.create(ctx.principal, input.name, ctx.meta);
    return { apiKey, key: plaintext };
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ id: UUID })
  @Mutation(() => Boolean, {
    description: 'Revokes an API key at once: requests and open subscriptions with it are refused from now on. Audited api_key.revoked.',
  })
  async revokeApiKey(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    await this.keys.revoke(ctx.principal, id, ctx.meta);
    return true;
  }

  @FieldResolver(() => [String], { nullable: true, description: "An AI-modules key's scopes; null for a company key" })
  scopes(@Root() key: ApiKey): string[] | null {
    return key.user ? parseScopes(key.scopes) : null;
  }

  @FieldResolver(() => ApiKeyCreatorType, { nullable: true, description: "The user an AI-modules key acts for; null for a company key" })
  async owner(@Root() key: ApiKey, @Ctx() ctx: GraphQLContext): Promise<ApiKeyCreatorType | null> {
    const userId = key.user?.id;
    if (!userId) return null;
    const user = await ctx.loaders.of(this.usersByIds).load(userId);
    return user ? { id: user.id, email: user.email } : null;
  }

  @FieldResolver(() => ApiKeyCreatorType, { nullable: true, description: 'Null for keys created from the command line or by another key' })
  async createdBy(@Root() key: ApiKey, @Ctx() ctx: GraphQLContext): Promise<ApiKeyCreatorType | null> {
    const userId = key.createdBy?.id;
    if (!userId) return null;
    const user = await ctx.loaders.of(this.usersByIds).load(userId);
    return user ? { id: user.id, email: user.email } : null;
  }
}

import { Arg, Ctx, Field, ID, InputType, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, UUID } from '../rest';
import { moduleScopes } from '../../src/auth/principal';
import { MAX_MODULE_KEYS_PER_USER, type IdentityApi, type ModuleKeyService } from '../../src/domains/identity';
import type { GraphQLContext } from '../context';
import { displayNameRule } from '../../src/errors/display-name';

@ObjectType('ModuleKey', { description: "One of the caller's AI-modules keys (sk_live_svc_…); the key itself is shown only once, at creation" })
export class ModuleKeyType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field({ description: 'The first characters of the key, to tell keys apart' })
  prefix!: string;

  @Rest({ items: { enum: moduleScopes } })
  @Field(() => [String], { description: `What the key may be used for: some of ${moduleScopes.join(', ')}` })
  scopes!: string[];

  @Field()
  createdAt!: Date;

  @Field(() => Date, { nullable: true, description: 'Last request made with the key (updated at most about once a minute)' })
  lastUsedAt!: Date | null;
}

@ObjectType('CreatedModuleKey')
export class CreatedModuleKeyType {
  @Field(() => ModuleKeyType)
  apiKey!: ModuleKeyType;

  @Rest({ description: 'The plaintext key (sk_live_svc_…); shown once, never again' })
  @Field({ description: 'The plaintext key (sk_live_svc_…); shown here once and never again' })
  key!: string;
}

@InputType('ModuleKeyCreateInput')
export class ModuleKeyCreateInput {
  @Rest({ minLength: 1, maxLength: 200 })
  @Field({ description: displayNameRule(200) })
  name!: string;

  @Rest({ minItems: 1, maxItems: moduleScopes.length, items: { enum: moduleScopes } })
  @Field(() => [String], { nullable: true, description: `Some of ${moduleScopes.join(', ')}; all six when omitted` })
  scopes?: string[] | null;
}

const SIGNED_IN = "With the user's own access token (the dashboard), never with a key.";

/** A user's own AI-modules keys: thin over identity's ModuleKeyService. */
@Resolver()
export class ModuleKeysResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new ModuleKeysResolver(identity.moduleKeys);

  constructor(private readonly keys: ModuleKeyService) {}

  @Access({ auth: 'authenticated' })
  @Query(() => [ModuleKeyType], { description: `The caller's active AI-modules keys, newest first: prefixes only. ${SIGNED_IN}` })
  myApiKeys(@Ctx() ctx: GraphQLContext) {
    return this.keys.list(ctx.principal);
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => CreatedModuleKeyType, {
    description:
      `Creates an AI-modules key for the caller; the plaintext is returned once. At most ${MAX_MODULE_KEYS_PER_USER} active keys per ` +
      `account (409 api_key_limit_reached). ${SIGNED_IN} Audited module_key.created.`,
  })
  async createMyApiKey(@Arg('input', () => ModuleKeyCreateInput) input: ModuleKeyCreateInput, @Ctx() ctx: GraphQLContext) {
    const { key, plaintext } = await this.keys.create(ctx.principal, input, ctx.meta);
    return { apiKey: key, key: plaintext };
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ id: UUID })
  @Mutation(() => Boolean, { description: `Revokes one of the caller's AI-modules keys at once. ${SIGNED_IN} Audited module_key.revoked.` })
  async revokeMyApiKey(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    await this.keys.revoke(ctx.principal, id, ctx.meta);
    return true;
  }
}

import { Arg, Ctx, Field, FieldResolver, ID, InputType, Int, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, type RestHints } from '../rest';
import { ModelFields } from '../shared/model';
import { MODEL_ID_PATTERN, MODEL_NAME_MAX } from '../../src/domains/catalog';
import { formatMicros, MONEY_PATTERN } from '../../src/money';
import type { GraphQLContext } from '../context';
import type { CatalogApi, Model, ModelAdminService } from '../../src/domains/catalog';

/** The REST name is data/models.json's, not the snake_case of the GraphQL name (price_per1k_tokens). */
const PRICE_NAME = 'price_per_1k_tokens';
const PRICE = 'Price per 1,000 tokens in the billing currency (BILLING_CURRENCY), a decimal with at most 6 places, at most 1000.00';

@ObjectType('AdminModel', { description: 'A model of the platform-wide catalog, blocked or not' })
export class AdminModelType extends ModelFields {
  @Rest({ description: 'Hidden from GET /models and refused with 422 model_blocked' })
  @Field({ description: 'Blocked models are hidden from the model list and refused (model_blocked)' })
  blocked!: boolean;

  @Rest({ name: PRICE_NAME, pattern: MONEY_PATTERN })
  @Field(() => String, { description: `${PRICE}: the currency cost of its usage, which spending budgets count` })
  pricePer1kTokens!: string;

  @Field()
  createdAt!: Date;
}

/** The bounds the catalog's administration checks, for both the create and the patch body. */
const limits: Record<'displayName' | 'provider' | 'family' | 'creditCost' | 'contextLength', RestHints> = {
  displayName: { minLength: 1, maxLength: 200 },
  provider: { minLength: 1, maxLength: 64 },
  family: { minLength: 1, maxLength: 64 },
  creditCost: { minimum: 0, description: 'Credits per 1,000 tokens' },
  contextLength: { minimum: 1, description: 'Context window in tokens' },
};

@InputType('ModelCreateInput')
export class ModelCreateInput {
  @Rest({ pattern: MODEL_ID_PATTERN })
  @Field(() => ID, { description: 'Slug: lower-case letters, digits, ".", "_" and "-", 1 to 100 characters' })
  id!: string;

  @Rest(limits.displayName)
  @Field()
  displayName!: string;

  @Rest(limits.provider)
  @Field()
  provider!: string;

  @Rest(limits.family)
  @Field()
  family!: string;

  @Rest(limits.creditCost)
  @Field(() => Int, { description: 'Credits per 1,000 tokens, >= 0' })
  creditCost!: number;

  @Rest(limits.contextLength)
  @Field(() => Int, { description: 'Context window in tokens, > 0' })
  contextLength!: number;

  @Field(() => Boolean, { nullable: true, description: 'Default false' })
  blocked?: boolean | null;

  @Rest({ name: PRICE_NAME, pattern: MONEY_PATTERN })
  @Field(() => String, { nullable: true, description: `${PRICE}. Default "0.00": its usage then costs nothing against a spending budget` })
  pricePer1kTokens?: string | null;
}

@InputType('ModelPatchInput', { description: 'Fields to change; omitted or null fields stay as they are' })
export class ModelPatchInput {
  @Rest(limits.displayName)
  @Field(() => String, { nullable: true })
  displayName?: string | null;

  @Rest(limits.provider)
  @Field(() => String, { nullable: true })
  provider?: string | null;

  @Rest(limits.family)
  @Field(() => String, { nullable: true })
  family?: string | null;

  @Rest(limits.creditCost)
  @Field(() => Int, { nullable: true })
  creditCost?: number | null;

  @Rest(limits.contextLength)
  @Field(() => Int, { nullable: true })
  contextLength?: number | null;

  @Field(() => Boolean, { nullable: true })
  blocked?: boolean | null;

  @Rest({ name: PRICE_NAME, pattern: MONEY_PATTERN })
  @Field(() => String, { nullable: true, description: PRICE })
  pricePer1kTokens?: string | null;
}

@Resolver(() => AdminModelType)
export class ModelAdminResolver {
  static from = ({ catalog }: { catalog: CatalogApi }) => new ModelAdminResolver(catalog.admin);

  constructor(private readonly models: ModelAdminService) {}

  @FieldResolver(() => String)
  pricePer1kTokens(@Root() model: Model): string {
    return formatMicros(model.priceMicrosPer1kTokens);
  }

  @Access({ auth: 'authenticated' })
  @Query(() => [AdminModelType], { description: 'The whole model catalog, blocked models included (owners, admins, API keys)' })
  adminModels(@Ctx() ctx: GraphQLContext) {
    return this.models.list(ctx.principal);
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => AdminModelType, { description: 'Adds a model to the catalog; platform superadmins only. Audited model.created.' })
  createModel(@Arg('input', () => ModelCreateInput) input: ModelCreateInput, @Ctx() ctx: GraphQLContext) {
    return this.models.create(ctx.principal, input, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ id: { minLength: 1, maxLength: MODEL_NAME_MAX } })
  @Mutation(() => AdminModelType, {
    description: 'Changes a catalog model (blocked: true hides and refuses it at once); platform superadmins only. Audited model.updated.',
  })
  updateModel(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => ModelPatchInput) input: ModelPatchInput,
    @Ctx() ctx: GraphQLContext,
  ) {
    return this.models.update(ctx.principal, id, input, ctx.meta);
  }
}

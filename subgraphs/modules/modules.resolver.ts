import { Ctx, Directive, Field, FieldResolver, ID, Int, ObjectType, Query, Resolver } from 'type-graphql';
import { requireAuthenticated } from '../../src/auth/policy';
import type { GraphQLContext } from '../context';

@Directive('@key(fields: "id")')
@ObjectType('Model', { description: 'An AI model of the catalog' })
export class ModelType {
  @Field(() => ID)
  id!: string;

  @Field()
  displayName!: string;

  @Field()
  provider!: string;

  @Field()
  family!: string;

  @Field(() => Int, { description: 'Credits per 1,000 tokens' })
  creditCost!: number;

  @Field(() => Int, { description: 'Context window in tokens' })
  contextLength!: number;
}

/** The modules subgraph's view of the identity-owned Company entity. */
@Directive('@key(fields: "id")')
@ObjectType('Company')
export class ModulesCompany {
  @Field(() => ID)
  id!: string;
}

@Resolver()
export class ModelResolver {
  @Query(() => [ModelType], { description: 'All models that are not blocked' })
  models(@Ctx() ctx: GraphQLContext) {
    requireAuthenticated(ctx.principal);
    return ctx.services.catalog.availableModels();
  }
}

@Resolver(() => ModulesCompany)
export class ModulesCompanyResolver {
  @FieldResolver(() => [ModelType], { description: 'Models the company may use' })
  availableModels(@Ctx() ctx: GraphQLContext) {
    return ctx.services.catalog.availableModels();
  }
}

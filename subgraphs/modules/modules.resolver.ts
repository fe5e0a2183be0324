import { Ctx, Directive, Field, FieldResolver, ID, ObjectType, Query, Resolver } from 'type-graphql';
import { ModelFields } from '../shared/model';
import { Rest } from '../rest';
import { Access } from '../policy/access';
import { requireAuthenticated } from '../../src/auth/policy';
import type { GraphQLContext } from '../context';
import type { CatalogApi, CatalogService } from '../../src/domains/catalog';

@Directive('@key(fields: "id")')
@ObjectType('Model', { description: 'An AI model of the catalog' })
export class ModelType extends ModelFields {}

/** The modules subgraph's view of the identity-owned Company entity. */
@Directive('@key(fields: "id")')
@ObjectType('Company')
export class ModulesCompany {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;
}

@Resolver()
export class ModelResolver {
  static from = ({ catalog }: { catalog: CatalogApi }) => new ModelResolver(catalog.models);

  constructor(readonly catalog: CatalogService) {}

  @Access({ auth: 'authenticated' })
  @Query(() => [ModelType], { description: 'All models that are not blocked' })
  models(@Ctx() ctx: GraphQLContext) {
    requireAuthenticated(ctx.principal);
    return this.catalog.availableModels();
  }
}

@Resolver(() => ModulesCompany)
export class ModulesCompanyResolver {
  static from = ({ catalog }: { catalog: CatalogApi }) => new ModulesCompanyResolver(catalog.models);

  constructor(private readonly catalog: CatalogService) {}

  @FieldResolver(() => [ModelType], { description: 'Models the company may use' })
  availableModels() {
    return this.catalog.availableModels();
  }
}

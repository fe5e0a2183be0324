import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, UUID } from '../rest';
import type { GraphQLContext } from '../context';
import {
  CLIENT_ID_MAX,
  CLIENT_SECRET_MAX,
  connectorNames,
  SYNC_INTERVAL_BOUNDS,
  TENANT_MAX,
  type ConnectorService,
  type ConnectorsApi,
} from '../../src/domains/connectors';

const syncInterval = { minimum: SYNC_INTERVAL_BOUNDS.min, maximum: SYNC_INTERVAL_BOUNDS.max };

@ObjectType('Connector', { description: "A company's configuration of one cloud-storage connector (google_drive, onedrive)" })
export class ConnectorType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  companyId!: string;

  @Rest({ enum: connectorNames })
  @Field({ description: 'google_drive (consumer accounts) or onedrive (workplace accounts)' })
  name!: string;

  @Field({ description: 'Whether users of the company may connect this provider' })
  enabled!: boolean;

  @Field(() => String, { nullable: true, description: 'The OAuth client id' })
  clientId!: string | null;

  @Field({ description: 'Whether an OAuth client secret is stored; the secret itself is never returned' })
  clientSecretSet!: boolean;

  @Field(() => String, { nullable: true, description: 'onedrive only: the Microsoft tenant (null: common)' })
  tenant!: string | null;

  @Rest(syncInterval)
  @Field(() => Int, { description: 'Minutes between automatic syncs, 15 to 1440 (default 60)' })
  syncIntervalMinutes!: number;

  @Field(() => Date, { nullable: true, description: 'Last change; null while never configured' })
  updatedAt!: Date | null;

  @Field(() => ID, { nullable: true, description: 'The user or API key that made the last change' })
  updatedBy!: string | null;
}

@InputType('ConnectorInput', { description: 'A partial update: fields left out keep their value; null clears clientId, clientSecret or tenant' })
export class ConnectorInput {
  @Rest({ description: 'Enabling needs client_id and client_secret set (422 otherwise)', notNull: true })
  @Field(() => Boolean, { nullable: true, description: 'Enabling needs clientId and clientSecret set' })
  enabled?: boolean | null;

  @Rest({ maxLength: CLIENT_ID_MAX })
  @Field(() => String, { nullable: true })
  clientId?: string | null;

  @Rest({ maxLength: CLIENT_SECRET_MAX })
  @Field(() => String, { nullable: true, description: 'Stored encrypted; never returned' })
  clientSecret?: string | null;

  @Rest({ maxLength: TENANT_MAX })
  @Field(() => String, { nullable: true, description: 'onedrive only: tenant id, domain, common, organizations or consumers' })
  tenant?: string | null;

  @Rest({ ...syncInterval, notNull: true })
  @Field(() => Int, { nullable: true, description: '15 to 1440' })
  syncIntervalMinutes?: number | null;
}

@ObjectType('ConnectorCheck', { description: 'One check of a connector test' })
export class ConnectorCheckType {
  @Field({ description: 'configuration, client_secret or token_endpoint' })
  name!: string;

  @Field()
  ok!: boolean;

  @Field()
  detail!: string;
}

@ObjectType('ConnectorTestResult', { description: 'The result of testing a connector; ok when every check passed' })
export class ConnectorTestResultType {
  @Field()
  name!: string;

  @Field()
  ok!: boolean;

  @Field(() => [ConnectorCheckType])
  checks!: ConnectorCheckType[];
}

@Resolver()
export class ConnectorAdminResolver {
  static from = ({ connectors }: { connectors: ConnectorsApi }) => new ConnectorAdminResolver(connectors.connectors);

  constructor(private readonly service: ConnectorService) {}

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
  @Query(() => [ConnectorType], {
    description: "Both cloud-storage connectors of the caller's company (owners, admins, company API keys); a superadmin may name any company.",
  })
  connectors(@Ctx() ctx: GraphQLContext, @Arg('companyId', () => ID, { nullable: true }) companyId?: string | null) {
    return this.service.list(ctx.principal, companyId);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ name: { maxLength: 64 }, companyId: UUID })
  @Mutation(() => ConnectorType, {
    description: 'Changes the given fields of a connector; audited connector.updated with the changed field names.',
  })
  updateConnector(
    @Arg('name', () => String) name: string,
    @Arg('input', () => ConnectorInput) input: ConnectorInput,
    @Ctx() ctx: GraphQLContext,
    @Arg('companyId', () => ID, { nullable: true }) companyId?: string | null,
  ) {
    return this.service.update(ctx.principal, name, { ...input }, ctx.meta, companyId);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ name: { maxLength: 64 }, companyId: UUID })
  @Mutation(() => ConnectorTestResultType, {
    description:
      "Tests a connector: configuration complete, then the provider's token endpoint reachable (5 s limit, SSRF-guarded). " +
      'A failed check is a result, not an error. Audited connector.tested.',
  })
  testConnector(
    @Arg('name', () => String) name: string,
    @Ctx() ctx: GraphQLContext,
    @Arg('companyId', () => ID, { nullable: true }) companyId?: string | null,
  ) {
    return this.service.test(ctx.principal, name, ctx.meta, companyId);
  }
}

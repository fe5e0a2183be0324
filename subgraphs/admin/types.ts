import { PageType } from '../page';
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';

@ObjectType('AuditEvent', { description: 'One audited action of a company' })
export class AuditEventType {
  @Field(() => ID)
  id!: string;

  @Field(() => ID, { nullable: true })
  companyId!: string | null;

  @Field({ description: 'What happened, e.g. auth.login or api_key.created' })
  action!: string;

  @Field({ description: 'user, api_key, system or anonymous' })
  actorType!: string;

  @Field(() => ID, { nullable: true })
  actorId!: string | null;

  @Field(() => String, { nullable: true, description: 'Email or key name at the time' })
  actorLabel!: string | null;

  @Field(() => String, { nullable: true })
  targetType!: string | null;

  @Field(() => ID, { nullable: true })
  targetId!: string | null;

  @Field(() => String, { nullable: true })
  ip!: string | null;

  @Field(() => String, { nullable: true })
  requestId!: string | null;

  @Field(() => GraphQLJSONObject, { nullable: true })
  data!: Record<string, unknown> | null;

  @Field()
  createdAt!: Date;
}

export const AuditEventPageType = PageType(AuditEventType, 'AuditEventPage');

@ObjectType('Health')
export class HealthType {
  @Field({ description: 'ok, or degraded when a dependency is unavailable' })
  status!: string;

  @Field({ description: 'The API version served (CalVer)' })
  version!: string;

  @Field()
  database!: string;

  @Field(() => Int)
  uptimeSeconds!: number;
}

@InputType('DocsFeedbackInput')
export class DocsFeedbackInput {
  @Field({ description: 'The documentation page the feedback is about' })
  page!: string;

  @Field(() => Boolean, { nullable: true })
  helpful?: boolean | null;

  @Field(() => String, { nullable: true })
  comment?: string | null;
}

@ObjectType('DocsFeedbackReceipt')
export class DocsFeedbackReceiptType {
  @Field(() => ID)
  id!: string;

  @Field()
  createdAt!: Date;
}

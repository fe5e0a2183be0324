import { PageType } from '../page';
import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import { Rest } from '../rest';
import { FEEDBACK_LIMITS } from '../../src/domains/platform';

@ObjectType('AuditEvent', { description: 'One audited action of a company' })
export class AuditEventType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Rest({ format: 'uuid' })
  @Field(() => ID, { nullable: true })
  companyId!: string | null;

  @Field({ description: 'What happened, e.g. auth.login or api_key.created' })
  action!: string;

  @Rest({ enum: ['user', 'api_key', 'system', 'anonymous'] })
  @Field({ description: 'user, api_key, system or anonymous' })
  actorType!: string;

  @Rest({ description: 'User or API key id' })
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

/** An audit log's `action` filter (an exact action name), on every log that takes one: an empty one is not "no filter". */
export const AUDIT_ACTION_BOUNDS = { minLength: 1, maxLength: 64 } as const;

@ObjectType('Health')
export class HealthType {
  @Rest({ enum: ['ok', 'degraded'] })
  @Field({ description: 'ok, or degraded when a dependency is unavailable' })
  status!: string;

  @Field({ description: 'The API version served (CalVer)' })
  version!: string;

  @Rest({ enum: ['ok', 'unavailable'] })
  @Field()
  database!: string;

  @Field(() => Int)
  uptimeSeconds!: number;
}

@InputType('DocsFeedbackInput')
export class DocsFeedbackInput {
  @Rest({ minLength: 1, maxLength: FEEDBACK_LIMITS.page })
  @Field({ description: 'The documentation page the feedback is about' })
  page!: string;

  @Rest({ description: 'Whether the page helped' })
  @Field(() => Boolean, { nullable: true })
  helpful?: boolean | null;

  @Rest({ maxLength: FEEDBACK_LIMITS.comment })
  @Field(() => String, { nullable: true })
  comment?: string | null;
}

@ObjectType('DocsFeedbackReceipt')
export class DocsFeedbackReceiptType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field()
  createdAt!: Date;
}

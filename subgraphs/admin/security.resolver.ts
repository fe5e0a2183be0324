import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { checkPage } from '../../src/pagination';
import { COMPANY_SESSIONS_PER_PAGE, type IdentityApi, type SecurityPolicyService } from '../../src/domains/identity';
import { PageType } from '../page';
import type { GraphQLContext } from '../context';

@ObjectType('SecurityPolicy', { description: "A company's security policy (defaults until first changed)" })
export class SecurityPolicyType {
  @Field(() => ID)
  companyId!: string;

  @Field({ description: 'Users must enrol in TOTP MFA; until they do, only enrolment, profile and sign-out work' })
  mfaRequired!: boolean;

  @Field(() => Int, { description: 'Minimum length of new passwords (reset, invitation), 12 to 128' })
  minPasswordLength!: number;

  @Field(() => Int, { nullable: true, description: 'Sessions unused for this many minutes end (5 to 43200); null: no idle timeout' })
  sessionIdleTimeoutMinutes!: number | null;

  @Field(() => [String], { description: 'Identity providers users may sign in with (google, microsoft)' })
  allowedSsoProviders!: string[];

  @Field(() => [String], { description: 'Email domains allowed to sign up by SSO through an invitation; empty: any' })
  ssoSignupEmailDomains!: string[];

  @Field(() => [String], { description: "CIDRs the company's users and keys may call from; empty: any address" })
  ipAllowlist!: string[];

  @Field(() => Int, { nullable: true, description: 'Company API keys older than this many days are refused; null: no limit' })
  apiKeyMaxAgeDays!: number | null;

  @Field(() => Date, { nullable: true, description: 'Last change; null while the defaults were never changed' })
  updatedAt!: Date | null;

  @Field(() => ID, { nullable: true, description: 'The user or API key that made the last change' })
  updatedBy!: string | null;
}

@InputType('SecurityPolicyInput', { description: 'A partial update: fields left out keep their value' })
export class SecurityPolicyInput {
  @Field(() => Boolean, { nullable: true })
  mfaRequired?: boolean | null;

  @Field(() => Int, { nullable: true })
  minPasswordLength?: number | null;

  @Field(() => Int, { nullable: true, description: 'null turns the idle timeout off' })
  sessionIdleTimeoutMinutes?: number | null;

  @Field(() => [String], { nullable: true })
  allowedSsoProviders?: string[] | null;

  @Field(() => [String], { nullable: true })
  ssoSignupEmailDomains?: string[] | null;

  @Field(() => [String], { nullable: true })
  ipAllowlist?: string[] | null;

  @Field(() => Int, { nullable: true, description: 'null removes the limit' })
  apiKeyMaxAgeDays?: number | null;
}

@ObjectType('CompanySession', { description: 'One active session of a user of the company' })
export class CompanySessionType {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  userId!: string;

  @Field()
  email!: string;

  @Field(() => String, { nullable: true, description: 'Browser and OS family read from the user agent; null when unknown' })
  device!: string | null;

  @Field(() => String, { nullable: true })
  userAgent!: string | null;

  @Field(() => String, { nullable: true, description: 'Client IP address at sign-in' })
  ip!: string | null;

  @Field()
  createdAt!: Date;

  @Field({ description: 'Last request seen (updated at most about once a minute)' })
  lastSeenAt!: Date;
}

export const CompanySessionPageType = PageType(CompanySessionType, 'CompanySessionPage');

@Resolver()
export class SecurityResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new SecurityResolver(identity.policyAdmin);

  constructor(private readonly policies: SecurityPolicyService) {}

  @Access({ auth: 'authenticated' })
  @Query(() => SecurityPolicyType, {
    description:
      "The caller's company security policy (owners, admins, company API keys); a superadmin may name any company.",
  })
  securityPolicy(@Ctx() ctx: GraphQLContext, @Arg('companyId', () => ID, { nullable: true }) companyId?: string | null) {
    return this.policies.get(ctx.principal, companyId);
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => SecurityPolicyType, {
    description: 'Changes the given fields of the security policy; audited security_policy.updated with the changes.',
  })
  updateSecurityPolicy(
    @Arg('input', () => SecurityPolicyInput) input: SecurityPolicyInput,
    @Ctx() ctx: GraphQLContext,
    @Arg('companyId', () => ID, { nullable: true }) companyId?: string | null,
  ) {
    return this.policies.update(ctx.principal, { ...input }, ctx.meta, companyId);
  }

  @Access({ auth: 'authenticated' })
  @Query(() => CompanySessionPageType, {
    description: "The company's active sessions, newest first (owners, admins, company API keys; a superadmin may name any company).",
  })
  companySessions(
    @Ctx() ctx: GraphQLContext,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: COMPANY_SESSIONS_PER_PAGE }) perPage: number,
    @Arg('companyId', () => ID, { nullable: true }) companyId?: string | null,
  ) {
    return this.policies.listSessions(ctx.principal, { ...checkPage(page, perPage), companyId });
  }
}

import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, type RestHints, RestArgs, UUID } from '../rest';
import { checkPage } from '../../src/pagination';
import {
  API_KEY_MAX_AGE_BOUNDS,
  COMPANY_SESSIONS_PER_PAGE,
  IDLE_TIMEOUT_BOUNDS,
  POLICY_MAX_PASSWORD_LENGTH,
  POLICY_MIN_PASSWORD_LENGTH,
  type IdentityApi,
  type SecurityPolicyService,
} from '../../src/domains/identity';

/** What REST documents and checks of each policy setting, in the policy and in a change of it. */
const setting: Record<
  'mfaRequired' | 'minPasswordLength' | 'sessionIdleTimeoutMinutes' | 'allowedSsoProviders' | 'ssoSignupEmailDomains' | 'ipAllowlist' | 'apiKeyMaxAgeDays',
  RestHints
> = {
  mfaRequired: {
    description:
      'Users must enrol in TOTP MFA. A user without MFA can still sign in, but every other request than ' +
      'POST /me/mfa/setup, POST /me/mfa/verify, GET and PATCH /me/profile and POST /auth/logout (and the ' +
      'matching GraphQL fields) answers 403 mfa_enrollment_required until enrolment is verified.',
  },
  minPasswordLength: {
    minimum: POLICY_MIN_PASSWORD_LENGTH,
    maximum: POLICY_MAX_PASSWORD_LENGTH,
    description: `Minimum length of new passwords (password reset; invitation acceptance), ${POLICY_MIN_PASSWORD_LENGTH} to ${POLICY_MAX_PASSWORD_LENGTH}. Existing passwords still sign in.`,
  },
  sessionIdleTimeoutMinutes: {
    minimum: IDLE_TIMEOUT_BOUNDS.min,
    maximum: IDLE_TIMEOUT_BOUNDS.max,
    description:
      `A session unused for this many minutes ends (${IDLE_TIMEOUT_BOUNDS.min} to ${IDLE_TIMEOUT_BOUNDS.max}; null: never): ` +
      'its tokens answer 401 token_invalid and it is revoked. Activity is recorded to the minute.',
  },
  allowedSsoProviders: {
    items: { enum: ['google', 'microsoft'] },
    description: "Providers the company's users may sign in with; others are refused (403). Default both.",
  },
  ssoSignupEmailDomains: {
    maxItems: 100,
    description: 'Email domains allowed to sign up by single sign-on through an invitation (403 otherwise); empty: any',
  },
  ipAllowlist: {
    maxItems: 100,
    description:
      "IPv4 and IPv6 addresses or CIDRs the company's users and API keys may call from (403 ip_not_allowed otherwise); empty: any. " +
      'Must include the address of the request that sets it.',
  },
  apiKeyMaxAgeDays: {
    minimum: API_KEY_MAX_AGE_BOUNDS.min,
    maximum: API_KEY_MAX_AGE_BOUNDS.max,
    description: 'Company API keys older than this many days answer 401 token_invalid; null: no limit',
  },
};
import { PageType, PAGE_BOUNDS } from '../page';
import type { GraphQLContext } from '../context';

@ObjectType('SecurityPolicy', { description: "A company's security policy (defaults until first changed)" })
export class SecurityPolicyType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  companyId!: string;

  @Rest(setting.mfaRequired)
  @Field({ description: 'Users must enrol in TOTP MFA; until they do, only enrolment, profile and sign-out work' })
  mfaRequired!: boolean;

  @Rest(setting.minPasswordLength)
  @Field(() => Int, { description: 'Minimum length of new passwords (reset, invitation), 12 to 128' })
  minPasswordLength!: number;

  @Rest(setting.sessionIdleTimeoutMinutes)
  @Field(() => Int, { nullable: true, description: 'Sessions unused for this many minutes end (5 to 43200); null: no idle timeout' })
  sessionIdleTimeoutMinutes!: number | null;

  @Rest(setting.allowedSsoProviders)
  @Field(() => [String], { description: 'Identity providers users may sign in with (google, microsoft)' })
  allowedSsoProviders!: string[];

  @Rest(setting.ssoSignupEmailDomains)
  @Field(() => [String], { description: 'Email domains allowed to sign up by SSO through an invitation; empty: any' })
  ssoSignupEmailDomains!: string[];

  @Rest(setting.ipAllowlist)
  @Field(() => [String], { description: "CIDRs the company's users and keys may call from; empty: any address" })
  ipAllowlist!: string[];

  @Rest(setting.apiKeyMaxAgeDays)
  @Field(() => Int, { nullable: true, description: 'Company API keys older than this many days are refused; null: no limit' })
  apiKeyMaxAgeDays!: number | null;

  @Field(() => Date, { nullable: true, description: 'Last change; null while the defaults were never changed' })
  updatedAt!: Date | null;

  @Field(() => ID, { nullable: true, description: 'The user or API key that made the last change' })
  updatedBy!: string | null;
}

@InputType('SecurityPolicyInput', { description: 'A partial update: fields left out keep their value; null only where a field says what it means' })
export class SecurityPolicyInput {
  @Rest({ ...setting.mfaRequired, notNull: true })
  @Field(() => Boolean, { nullable: true })
  mfaRequired?: boolean | null;

  @Rest({ ...setting.minPasswordLength, notNull: true })
  @Field(() => Int, { nullable: true })
  minPasswordLength?: number | null;

  @Rest(setting.sessionIdleTimeoutMinutes)
  @Field(() => Int, { nullable: true, description: 'null turns the idle timeout off' })
  sessionIdleTimeoutMinutes?: number | null;

  @Rest({ ...setting.allowedSsoProviders, notNull: true })
  @Field(() => [String], { nullable: true })
  allowedSsoProviders?: string[] | null;

  @Rest({ ...setting.ssoSignupEmailDomains, notNull: true })
  @Field(() => [String], { nullable: true })
  ssoSignupEmailDomains?: string[] | null;

  @Rest({ ...setting.ipAllowlist, notNull: true })
  @Field(() => [String], { nullable: true })
  ipAllowlist?: string[] | null;

  @Rest(setting.apiKeyMaxAgeDays)
  @Field(() => Int, { nullable: true, description: 'null removes the limit' })
  apiKeyMaxAgeDays?: number | null;
}

@ObjectType('CompanySession', { description: 'One active session of a user of the company' })
export class CompanySessionType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Rest({ format: 'uuid' })
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
  @RestArgs({ companyId: UUID })
  @Query(() => SecurityPolicyType, {
    description:
      "The caller's company security policy (owners, admins, company API keys); a superadmin may name any company.",
  })
  securityPolicy(@Ctx() ctx: GraphQLContext, @Arg('companyId', () => ID, { nullable: true }) companyId?: string | null) {
    return this.policies.get(ctx.principal, companyId);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ companyId: UUID })
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
  @RestArgs({ ...PAGE_BOUNDS, companyId: UUID })
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

import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { PageType } from '../page';
import { Rest } from '../rest';
import { roles, userStatuses } from '../../src/domains/identity';
import { RoleValue } from '../shared/role';
import { UserStatusValue } from '../shared/user-status';

@ObjectType('AdminUserCompany', { description: 'The company a user belongs to, as administration lists show it' })
export class AdminUserCompanyType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;
}

@ObjectType('AdminUser', { description: 'A user as company administrators see it' })
export class AdminUserType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field()
  email!: string;

  @Field(() => String, { nullable: true })
  name!: string | null;

  @Rest({ enum: roles, description: 'owner, admin or member' })
  @Field(() => RoleValue)
  role!: RoleValue;

  @Rest({ enum: userStatuses, description: 'active or suspended' })
  @Field(() => UserStatusValue)
  status!: UserStatusValue;

  @Field({ description: 'Platform operator (acts across companies)' })
  isSuperadmin!: boolean;

  @Field({ description: 'Whether a second factor (TOTP) is on' })
  mfaEnabled!: boolean;

  @Field()
  createdAt!: Date;

  @Field()
  updatedAt!: Date;

  @Field(() => Date, { nullable: true })
  lastLoginAt!: Date | null;
}

export const AdminUserPageType = PageType(AdminUserType, 'AdminUserPage');

@ObjectType('AdminUserSession', { description: 'One active session of a user, as administrators see it' })
export class AdminUserSessionType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field(() => String, { nullable: true, description: 'Browser and OS family (or tool name) read from the user agent' })
  device!: string | null;

  @Field(() => String, { nullable: true })
  userAgent!: string | null;

  @Field(() => String, { nullable: true })
  ip!: string | null;

  @Field()
  createdAt!: Date;

  @Field()
  lastSeenAt!: Date;

  @Field({ description: 'The session of the access token making this request' })
  current!: boolean;
}

export const AdminUserSessionPageType = PageType(AdminUserSessionType, 'AdminUserSessionPage');

@ObjectType('AdminUsageByModel', { description: "A user's usage of one model over the period" })
export class AdminUsageByModelType {
  @Field()
  model!: string;

  @Field(() => Int)
  credits!: number;

  @Field(() => Int)
  tokens!: number;

  @Field(() => Int, { description: 'Usage records (metered uses)' })
  requests!: number;

  @Field(() => String, { description: 'Currency cost at the model\'s price (decimal, BILLING_CURRENCY)' })
  cost!: string;
}

@ObjectType('AdminUsageTotals')
export class AdminUsageTotalsType {
  @Field(() => Int)
  credits!: number;

  @Field(() => Int)
  tokens!: number;

  @Field(() => Int)
  requests!: number;

  @Field(() => String, { description: 'Currency cost (decimal, BILLING_CURRENCY)' })
  cost!: string;
}

@ObjectType('AdminUserUsage', { description: "A user's usage over the last `days` days, by model, with totals" })
export class AdminUserUsageType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  userId!: string;

  @Field(() => Int)
  days!: number;

  @Field({ description: 'Start of the period (now minus days)' })
  since!: Date;

  @Field(() => [AdminUsageByModelType], { description: 'Most credits first' })
  items!: AdminUsageByModelType[];

  @Field(() => AdminUsageTotalsType)
  totals!: AdminUsageTotalsType;
}

@ObjectType('AdminPasswordReset', { description: 'A password reset link mailed to a user' })
export class AdminPasswordResetType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  userId!: string;

  @Field({ description: 'When the mailed link stops working' })
  expiresAt!: Date;
}

@ObjectType('AdminForceLogout')
export class AdminForceLogoutType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  userId!: string;

  @Field(() => Int, { description: 'Sessions ended' })
  revokedSessions!: number;
}

@InputType('AdminUserPatchInput', { description: 'Fields to change; omitted fields stay as they are' })
export class AdminUserPatchInput {
  @Rest({ maxLength: 400 })
  @Field(() => String, { nullable: true, description: '1 to 200 characters once trimmed, without control or bidirectional formatting characters; null clears it' })
  name?: string | null;

  @Rest({ enum: roles, description: 'owner, admin or member (only an owner grants owner)', notNull: true })
  @Field(() => RoleValue, { nullable: true, description: 'Only an owner grants OWNER' })
  role?: RoleValue | null;

  @Rest({ enum: userStatuses, description: 'active or suspended (suspending ends every session)', notNull: true })
  @Field(() => UserStatusValue, { nullable: true, description: 'Suspending ends every session' })
  status?: UserStatusValue | null;
}

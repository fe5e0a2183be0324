import { Directive, Field, ID, InputType, ObjectType, registerEnumType } from 'type-graphql';
import { Rest } from '../rest';
import { MAX_PASSWORD_LENGTH } from '../../src/auth/password';
import { roles } from '../../src/auth/principal';
import { RoleValue } from '../shared/role';
import { UserStatusValue } from '../shared/user-status';

export enum AuthMethodValue {
  SESSION = 'session',
  API_KEY = 'api_key',
}
registerEnumType(AuthMethodValue, { name: 'AuthMethod', description: 'How the caller authenticated' });

@Directive('@key(fields: "id")')
@ObjectType('Company', { description: 'A tenant: every user, key and record belongs to one company' })
export class CompanyType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field()
  createdAt!: Date;
}

@Directive('@key(fields: "id")')
@ObjectType('User')
export class UserType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Field()
  email!: string;

  @Field(() => String, { nullable: true })
  name!: string | null;

  @Rest({ enum: roles })
  @Field(() => RoleValue)
  role!: RoleValue;

  @Field(() => UserStatusValue)
  status!: UserStatusValue;

  @Field()
  createdAt!: Date;

  @Field(() => Date, { nullable: true })
  lastLoginAt!: Date | null;

  @Field({ description: 'Whether login needs a second factor (TOTP or a recovery code)' })
  mfaEnabled!: boolean;

  @Field(() => Date, {
    nullable: true,
    description: 'When the requested deletion of this account runs unless cancelled (cancelAccountDeletion); null when none is scheduled',
  })
  deletionScheduledFor!: Date | null;
}

@ObjectType('ApiKeyCredential', { description: 'The company API key a request was made with' })
export class ApiKeyCredentialType {
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field({ description: 'The first characters of the key' })
  prefix!: string;

  @Field()
  createdAt!: Date;
}

@ObjectType('Viewer', { description: 'The caller: a signed-in user, or a company API key without a user' })
export class ViewerType {
  @Field(() => RoleValue, { description: 'Effective role; company API keys act as ADMIN' })
  role!: RoleValue;

  @Field(() => AuthMethodValue)
  authMethod!: AuthMethodValue;

  @Field(() => CompanyType)
  company!: CompanyType;

  @Field(() => UserType, { nullable: true })
  user!: UserType | null;

  @Field(() => ApiKeyCredentialType, { nullable: true })
  apiKey!: ApiKeyCredentialType | null;
}

@ObjectType('TokenPair')
export class TokenPairType {
  @Field({ description: 'HS256 JWT, valid 15 minutes' })
  accessToken!: string;

  @Field({ description: 'Valid 30 days; rotated by refreshToken, which invalidates it' })
  refreshToken!: string;
}

@ObjectType('AuthPayload')
export class AuthPayloadType extends TokenPairType {
  @Field(() => UserType)
  user!: UserType;
}

@InputType('LoginInput')
export class LoginInput {
  @Rest({ minLength: 3, maxLength: 320 })
  @Field()
  email!: string;

  @Rest({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH })
  @Field()
  password!: string;

  @Rest({ maxLength: 64 })
  @Field(() => String, { nullable: true, description: 'A TOTP code or a recovery code; required when MFA is enabled' })
  totpCode?: string | null;
}

@InputType('RefreshTokenInput')
export class RefreshTokenInput {
  @Rest({ minLength: 1, maxLength: 512 })
  @Field()
  refreshToken!: string;
}

import { Field, InputType, ObjectType } from 'type-graphql';
import { Rest } from '../rest';
import { MAX_PASSWORD_LENGTH } from '../../src/auth/password';

@ObjectType('MfaSetup', { description: 'A TOTP enrolment; shown this once. MFA stays off until verifyMfa confirms a code' })
export class MfaSetupType {
  @Field({ description: 'otpauth://totp/Atrium:<email>?secret=…&issuer=Atrium (RFC 6238: SHA-1, 6 digits, 30 s)' })
  otpauthUri!: string;

  @Field({ description: 'The URI as a QR code: a data:image/png;base64 URI' })
  qrCode!: string;

  @Field({ description: 'The base32 secret, for apps that cannot scan' })
  secret!: string;

  @Rest({ minItems: 8, maxItems: 8 })
  @Field(() => [String], { description: '8 single-use recovery codes; each replaces a TOTP code once' })
  recoveryCodes!: string[];
}

@ObjectType('MfaStatus')
export class MfaStatusType {
  @Rest({ name: 'mfa_enabled' })
  @Field()
  enabled!: boolean;

  @Field(() => Date, { nullable: true })
  enabledAt!: Date | null;
}

@InputType('StepUpInput')
export class StepUpInput {
  @Rest({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH })
  @Field()
  password!: string;

  @Rest({ minLength: 1, maxLength: 64 })
  @Field(() => String, { nullable: true, description: 'A TOTP code or a recovery code; required when MFA is enabled' })
  totpCode?: string | null;
}

@ObjectType('StepUpPayload')
export class StepUpPayloadType {
  @Field({ description: 'A new access token for the same session, with the auth_time claim of this step-up' })
  accessToken!: string;

  @Field({ description: 'When the session was last authenticated (now)' })
  authenticatedAt!: Date;

  @Field({ description: 'Until when sensitive operations are allowed without another step-up (5 minutes)' })
  stepUpExpiresAt!: Date;
}

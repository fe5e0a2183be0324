import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import type { GraphQLContext } from '../context';
import type { IdentityApi, MfaService, StepUpService } from '../../src/domains/identity';
import { MfaSetupType, MfaStatusType, StepUpInput, StepUpPayloadType } from './mfa.types';
import { RestArgs } from '../rest';

@Resolver()
export class MfaResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new MfaResolver(identity.mfa, identity.stepUp);

  constructor(
    private readonly mfa: MfaService,
    private readonly stepUps: StepUpService,
  ) {}

  @Access({ auth: 'authenticated', duringMfaEnrollment: true })
  @Mutation(() => MfaSetupType, {
    description: 'Starts TOTP enrolment: a secret, its QR code and 8 recovery codes, shown this once',
  })
  setupMfa(@Ctx() ctx: GraphQLContext) {
    return this.mfa.setup(ctx.principal, ctx.meta);
  }

  @Access({ auth: 'authenticated', rateLimit: 'auth', duringMfaEnrollment: true })
  @RestArgs({ code: { name: 'totp_code', minLength: 1, maxLength: 64 } })
  @Mutation(() => MfaStatusType, { description: 'Confirms enrolment with a current code; from then on login needs a second factor' })
  verifyMfa(@Arg('code', () => String) code: string, @Ctx() ctx: GraphQLContext) {
    return this.mfa.enable(ctx.principal, code, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => Boolean, {
    description: 'Turns MFA off and deletes the secret and recovery codes; needs an authentication within 5 minutes (stepUp)',
  })
  async disableMfa(@Ctx() ctx: GraphQLContext) {
    await this.mfa.disable(ctx.principal, ctx.meta);
    return true;
  }

  @Access({ auth: 'authenticated', rateLimit: 'auth' })
  @Mutation(() => StepUpPayloadType, {
    description: 'Confirms the password (and a TOTP or recovery code when MFA is on) for sensitive operations in the next 5 minutes',
  })
  stepUp(@Arg('input', () => StepUpInput) input: StepUpInput, @Ctx() ctx: GraphQLContext) {
    return this.stepUps.stepUp(ctx.principal, input, ctx.meta);
  }
}

import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import type { GraphQLContext } from '../context';
import { MfaSetupType, MfaStatusType, StepUpInput, StepUpPayloadType } from './mfa.types';

@Resolver()
export class MfaResolver {
  @Mutation(() => MfaSetupType, {
    description: 'Starts TOTP enrolment: a secret, its QR code and 8 recovery codes, shown this once',
  })
  setupMfa(@Ctx() ctx: GraphQLContext) {
    return ctx.services.mfa.setup(ctx.principal, ctx.meta);
  }

  @Mutation(() => MfaStatusType, { description: 'Confirms enrolment with a current code; from then on login needs a second factor' })
  verifyMfa(@Arg('code', () => String) code: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.mfa.enable(ctx.principal, code, ctx.meta);
  }

  @Mutation(() => Boolean, {
    description: 'Turns MFA off and deletes the secret and recovery codes; needs an authentication within 5 minutes (stepUp)',
  })
  async disableMfa(@Ctx() ctx: GraphQLContext) {
    await ctx.services.mfa.disable(ctx.principal, ctx.meta);
    return true;
  }

  @Mutation(() => StepUpPayloadType, {
    description: 'Confirms the password (and a TOTP or recovery code when MFA is on) for sensitive operations in the next 5 minutes',
  })
  stepUp(@Arg('input', () => StepUpInput) input: StepUpInput, @Ctx() ctx: GraphQLContext) {
    return ctx.services.stepUp.stepUp(ctx.principal, input, ctx.meta);
  }
}

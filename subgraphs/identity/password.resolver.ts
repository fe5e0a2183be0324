import { Arg, Ctx, Field, InputType, Mutation, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs } from '../rest';
import { MAX_PASSWORD_LENGTH } from '../../src/auth/password';
import { MIN_PASSWORD_LENGTH } from '../../src/domains/identity';
import type { GraphQLContext } from '../context';
import type { IdentityApi, PasswordResetService } from '../../src/domains/identity';

@InputType('ResetPasswordInput')
export class ResetPasswordInput {
  @Rest({ minLength: 1, maxLength: 512 })
  @Field({ description: 'The token from the reset link (the token query parameter of /app/reset-password)' })
  token!: string;

  @Rest({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH })
  @Field({ description: 'At least 12 characters' })
  newPassword!: string;
}

@Resolver()
export class PasswordResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new PasswordResolver(identity.passwordReset);

  constructor(private readonly passwordReset: PasswordResetService) {}

  @Access({ auth: 'public', rateLimit: 'auth' })
  @RestArgs({ email: { minLength: 3, maxLength: 320 } })
  @Mutation(() => Boolean, {
    description:
      'Asks for a password reset link by mail. Always true, whether or not an account has this email: the link ' +
      'is mailed (valid 30 minutes by default, single use) only to an active account. Public.',
  })
  async requestPasswordReset(@Arg('email', () => String) email: string, @Ctx() ctx: GraphQLContext) {
    await this.passwordReset.request(email, ctx.meta);
    return true;
  }

  @Access({ auth: 'public', rateLimit: 'auth' })
  @Mutation(() => Boolean, {
    description:
      'Sets a new password with the token of a reset link; every session of the account ends and its failed-login ' +
      'count is cleared. An invalid, expired or used token is password_reset_token_invalid. Public.',
  })
  async resetPassword(@Arg('input', () => ResetPasswordInput) input: ResetPasswordInput, @Ctx() ctx: GraphQLContext) {
    await this.passwordReset.confirm({ token: input.token, newPassword: input.newPassword }, ctx.meta);
    return true;
  }
}

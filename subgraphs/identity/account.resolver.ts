import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import type { GraphQLContext } from '../context';
import type { AccountDeletionService, EmailChangeService, IdentityApi } from '../../src/domains/identity';
import { AccountDeletionType, EmailChangeRequestType } from './account.types';
import { RestArgs } from '../rest';

/** Email change and account deletion: the sensitive steps need an authentication within 5 minutes (stepUp). */
@Resolver()
export class AccountResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new AccountResolver(identity.emailChange, identity.deletion);

  constructor(
    private readonly emailChange: EmailChangeService,
    private readonly deletion: AccountDeletionService,
  ) {}

  @Access({ auth: 'authenticated', rateLimit: 'auth' })
  @RestArgs({ newEmail: { minLength: 3, maxLength: 320 } })
  @Mutation(() => EmailChangeRequestType, {
    description:
      'Asks to change the email: mails a confirmation link to the new address and a notice to the current one. ' +
      'Needs an authentication within 5 minutes (stepUp). An address used by another account is email_taken (409); ' +
      'a newer request replaces a pending one.',
  })
  requestEmailChange(@Arg('newEmail', () => String) newEmail: string, @Ctx() ctx: GraphQLContext) {
    return this.emailChange.request(ctx.principal, newEmail, ctx.meta);
  }

  @Access({ auth: 'public', rateLimit: 'auth' })
  @RestArgs({ token: { minLength: 1, maxLength: 512 } })
  @Mutation(() => Boolean, {
    description:
      'Sets the email to the address the token was mailed to. Needs no credential: the token (from the link) is the proof; ' +
      'it works once, until it expires. Invalid, used, replaced or expired: email_change_token_invalid.',
  })
  async confirmEmailChange(@Arg('token', () => String) token: string, @Ctx() ctx: GraphQLContext) {
    await this.emailChange.confirm(token, ctx.meta);
    return true;
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => Boolean, { description: "Voids the caller's pending email change; false when there was none" })
  cancelEmailChange(@Ctx() ctx: GraphQLContext) {
    return this.emailChange.cancel(ctx.principal, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => AccountDeletionType, {
    description:
      "Schedules the deletion of the caller's account after the grace period (ACCOUNT_DELETION_GRACE_DAYS) and mails them. " +
      'Needs an authentication within 5 minutes (stepUp). The only owner of a company with other users is refused (conflict). ' +
      'Asking again while scheduled answers the same date.',
  })
  requestAccountDeletion(@Ctx() ctx: GraphQLContext) {
    return this.deletion.request(ctx.principal, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => Boolean, { description: "Cancels the scheduled deletion of the caller's account; conflict when none is scheduled" })
  async cancelAccountDeletion(@Ctx() ctx: GraphQLContext) {
    await this.deletion.cancel(ctx.principal, ctx.meta);
    return true;
  }
}

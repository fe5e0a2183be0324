import { Arg, Ctx, Field, InputType, Mutation, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest } from '../rest';
import { MAX_PASSWORD_LENGTH } from '../../src/auth/password';
import type { GraphQLContext } from '../context';
import type { IdentityApi, InvitationService } from '../../src/domains/identity';
import { AuthPayloadType } from './types';

@InputType('AcceptInvitationInput')
export class AcceptInvitationInput {
  @Rest({ minLength: 1, maxLength: 512 })
  @Field({ description: 'The token from the invitation link' })
  token!: string;

  @Rest({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH })
  @Field({ description: 'The new account password (at least 12 characters)' })
  password!: string;

  @Rest({ maxLength: 200 })
  @Field(() => String, { nullable: true, description: 'Display name, 1 to 200 characters, without control or bidirectional formatting characters' })
  name?: string | null;
}

@Resolver()
export class InvitationAcceptResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new InvitationAcceptResolver(identity.invitations);

  constructor(private readonly invitations: InvitationService) {}

  @Access({ auth: 'public', rateLimit: 'auth' })
  @Mutation(() => AuthPayloadType, {
    description:
      "Public: creates the invited user in the invitation's company with its role and signs them in. A bad, used, " +
      'revoked or expired token is invitation_invalid.',
  })
  acceptInvitation(@Arg('input', () => AcceptInvitationInput) input: AcceptInvitationInput, @Ctx() ctx: GraphQLContext) {
    return this.invitations.accept(input, ctx.meta);
  }
}

import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { Access } from '../policy/access';
import { Rest, RestArgs, UUID } from '../rest';
import type { GraphQLContext } from '../context';
import { invitationStatuses, MAX_BULK_INVITATIONS, roles, type IdentityApi, type InvitationService } from '../../src/domains/identity';
import { PageType, PAGE_BOUNDS } from '../page';
import { RoleValue } from '../shared/role';
import { BulkInvitationOutcomeStatusValue, InvitationStatusValue } from '../shared/invitation-status';

@ObjectType('Invitation', { description: 'An invitation to join a company with a role' })
export class InvitationType {
  @Rest({ format: 'uuid' })
  @Field(() => ID)
  id!: string;

  @Rest({ format: 'uuid' })
  @Field(() => ID)
  companyId!: string;

  @Field({ description: 'The invited address, lower-cased' })
  email!: string;

  @Rest({ enum: roles, description: 'owner, admin or member' })
  @Field(() => RoleValue)
  role!: RoleValue;

  @Rest({ enum: invitationStatuses, description: 'A pending invitation past expires_at is expired' })
  @Field(() => InvitationStatusValue, { description: 'A PENDING invitation past expiresAt is EXPIRED' })
  status!: InvitationStatusValue;

  @Rest({ name: 'invited_by', format: 'uuid', description: 'The inviting user; null for an API key' })
  @Field(() => ID, { nullable: true, description: 'The user who invited; null for an API key or a deleted user' })
  invitedById!: string | null;

  @Field()
  createdAt!: Date;

  @Field({ description: 'Until when the mailed link works' })
  expiresAt!: Date;

  @Field(() => Date, { nullable: true })
  acceptedAt!: Date | null;
}

export const InvitationPageType = PageType(InvitationType, 'InvitationPage');

@InputType('InvitationInput')
export class InvitationInput {
  // The address itself is checked by the service (per row in a bulk request).
  @Rest({ maxLength: 320 })
  @Field()
  email!: string;

  @Rest({ enum: roles, description: 'owner (owners only), admin or member' })
  @Field(() => RoleValue, { description: 'Only an owner invites an OWNER' })
  role!: RoleValue;
}

@InputType('BulkInvitationInput')
export class BulkInvitationInput {
  @Rest({ minItems: 1, maxItems: MAX_BULK_INVITATIONS })
  @Field(() => [InvitationInput], { description: '1 to 100 invitations' })
  invitations!: InvitationInput[];
}

@ObjectType('BulkInvitationError')
export class BulkInvitationErrorType {
  @Field({ description: 'The error code, as a single request would have got it' })
  code!: string;

  @Field()
  detail!: string;
}

@ObjectType('BulkInvitationOutcome', { description: 'What became of one row of a bulk invitation' })
export class BulkInvitationOutcomeType {
  @Field()
  email!: string;

  @Rest({ enum: ['created', 'failed'], description: 'created or failed' })
  @Field(() => BulkInvitationOutcomeStatusValue)
  status!: BulkInvitationOutcomeStatusValue;

  @Field(() => InvitationType, { nullable: true })
  invitation!: InvitationType | null;

  @Field(() => BulkInvitationErrorType, { nullable: true })
  error!: BulkInvitationErrorType | null;
}

@ObjectType('BulkInvitationResult')
export class BulkInvitationResultType {
  @Field(() => [BulkInvitationOutcomeType], { description: 'One outcome per row, in the order given' })
  results!: BulkInvitationOutcomeType[];

  @Field(() => Int)
  created!: number;

  @Field(() => Int)
  failed!: number;
}

@Resolver()
export class InvitationResolver {
  static from = ({ identity }: { identity: IdentityApi }) => new InvitationResolver(identity.invitations);

  constructor(private readonly service: InvitationService) {}

  @Access({ auth: 'authenticated' })
  @RestArgs(PAGE_BOUNDS)
  @Query(() => InvitationPageType, {
    description: "The caller's company's invitations, newest first (owners, admins, API keys); status filters (a PENDING invitation past its expiry counts as EXPIRED)",
  })
  invitations(
    @Ctx() ctx: GraphQLContext,
    @Arg('status', () => InvitationStatusValue, { nullable: true }) status: InvitationStatusValue | null,
    @Arg('page', () => Int, { defaultValue: 1 }) page: number,
    @Arg('perPage', () => Int, { defaultValue: 20 }) perPage: number,
  ) {
    return this.service.list(ctx.principal, { status, page, perPage });
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => InvitationType, {
    description:
      "Invites an address into the caller's company and mails a single-use link; only owners may invite owners. " +
      'A user with the address is email_taken, a pending invitation for it conflict.',
  })
  createInvitation(@Arg('input', () => InvitationInput) input: InvitationInput, @Ctx() ctx: GraphQLContext) {
    return this.service.invite(ctx.principal, input, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @Mutation(() => BulkInvitationResultType, {
    description: 'Invites up to 100 addresses; each row is created or fails on its own',
  })
  createInvitations(@Arg('input', () => BulkInvitationInput) input: BulkInvitationInput, @Ctx() ctx: GraphQLContext) {
    return this.service.inviteBulk(ctx.principal, input.invitations, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ id: UUID })
  @Mutation(() => InvitationType, {
    description: 'Mails a new link for a pending or expired invitation, with a new expiry; the previous link stops working',
  })
  resendInvitation(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return this.service.resend(ctx.principal, id, ctx.meta);
  }

  @Access({ auth: 'authenticated' })
  @RestArgs({ id: UUID })
  @Mutation(() => InvitationType, { description: 'Revokes a pending invitation; its link stops working' })
  revokeInvitation(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return this.service.revoke(ctx.principal, id, ctx.meta);
  }
}

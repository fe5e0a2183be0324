import { ModuleKeysResolver } from './module-keys.resolver';
import { defineSubgraph } from '../build-subgraph';
import { canSeeCompany, type GraphQLContext } from '../context';
import { identityDomain } from '../../src/domains/identity';
import { AuthResolver, UserResolver } from './identity.resolver';
import { SessionResolver } from './session.resolver';
import { ProfileResolver } from './profile.resolver';
import { MfaResolver } from './mfa.resolver';
import { PasswordResolver } from './password.resolver';
import { AccountResolver } from './account.resolver';
import { InvitationAcceptResolver } from './invitation.resolver';

export const identitySubgraph = defineSubgraph({
  name: 'identity',
  domains: [identityDomain],
  resolvers: [AuthResolver, UserResolver, SessionResolver, ProfileResolver, MfaResolver, AccountResolver, PasswordResolver, InvitationAcceptResolver, ModuleKeysResolver],
  references: {
    // A gateway may ask for any key; answer only inside the caller's company.
    Company: (ref: { id: string }, ctx: GraphQLContext) =>
      canSeeCompany(ctx, ref.id) ? ctx.loaders.of(ctx.container.get(UserResolver).companiesByIds).load(ref.id) : null,
    // A user as the API shows users: oneself, or the company's users to its owners, admins and keys (a member
    // reads no coworker anywhere else), or any to a superadmin.
    User: async (ref: { id: string }, ctx: GraphQLContext) => {
      const p = ctx.principal;
      if (p.kind === 'anonymous' || (p.kind === 'user' && p.role === 'member' && !p.isSuperadmin && p.userId !== ref.id)) return null;
      const user = await ctx.loaders.of(ctx.container.get(UserResolver).usersByIds).load(ref.id);
      return user && canSeeCompany(ctx, user.company.id) ? user : null;
    },
  },
});

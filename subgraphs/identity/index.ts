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
    User: async (ref: { id: string }, ctx: GraphQLContext) => {
      const user = await ctx.loaders.of(ctx.container.get(UserResolver).usersByIds).load(ref.id);
      return user && canSeeCompany(ctx, user.company.id) ? user : null;
    },
  },
});

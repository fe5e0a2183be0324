import { registerEnumType } from 'type-graphql';
import type { Role } from '../../src/auth/principal';
import type { Same } from './same';

/**
 * The one GraphQL `Role`, for every role a field answers or an argument
 * takes, in every subgraph (identity's viewer and users, admin's users and
 * invitations): a client never meets the same role as an enum in one place
 * and a string in another. Each value is the domain's role, so resolvers pass
 * it through unchanged; the REST adapter answers and takes the lower-case of
 * the name, which is that same string (rest-compat/shapes.ts).
 */
export enum RoleValue {
  OWNER = 'owner',
  ADMIN = 'admin',
  MEMBER = 'member',
}
registerEnumType(RoleValue, { name: 'Role', description: 'A member role within a company' });

// Every domain role has its value here, and nothing else: the enum cannot drift from the domain's list.
const sameRoles: Same<`${RoleValue}`, Role> = true;
void sameRoles;

import { registerEnumType } from 'type-graphql';
import type { UserStatus } from '../../src/domains/identity';
import type { Same } from './same';

/**
 * The one GraphQL `UserStatus`, for every user status a field answers or an
 * argument takes, in every subgraph (identity's users, admin's users, their
 * status filter and patch): a client never meets the same status as an enum
 * in one place and a string in another. Each value is the domain's status, so
 * resolvers pass it through unchanged; the REST adapter answers and takes the
 * lower-case of the name, which is that same string (rest-compat/shapes.ts).
 */
export enum UserStatusValue {
  ACTIVE = 'active',
  SUSPENDED = 'suspended',
}
registerEnumType(UserStatusValue, { name: 'UserStatus', description: 'A user account status; a SUSPENDED user cannot sign in' });

// Every domain user status has its value here, and nothing else: the enum cannot drift from the domain's list.
const sameUserStatuses: Same<`${UserStatusValue}`, UserStatus> = true;
void sameUserStatuses;

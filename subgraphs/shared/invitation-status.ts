import { registerEnumType } from 'type-graphql';
import type { BulkInvitationResult, InvitationStatus } from '../../src/domains/identity';
import type { Same } from './same';

/**
 * The one GraphQL `InvitationStatus`, for an invitation's status and the
 * `invitations(status:)` filter alike, and `BulkInvitationOutcomeStatus`, for
 * what became of one row of a bulk invitation. Each value is the domain's
 * string, so resolvers pass it through unchanged; the REST adapter answers and
 * takes the lower-case of the name, which is that same string
 * (rest-compat/shapes.ts).
 */
export enum InvitationStatusValue {
  PENDING = 'pending',
  ACCEPTED = 'accepted',
  REVOKED = 'revoked',
  EXPIRED = 'expired',
}
registerEnumType(InvitationStatusValue, {
  name: 'InvitationStatus',
  description: 'Where an invitation stands; a PENDING invitation past its expiry is EXPIRED',
});

export enum BulkInvitationOutcomeStatusValue {
  CREATED = 'created',
  FAILED = 'failed',
}
registerEnumType(BulkInvitationOutcomeStatusValue, {
  name: 'BulkInvitationOutcomeStatus',
  description: 'Whether one row of a bulk invitation was created or failed',
});

// Every domain value has its value here, and nothing else: the enums cannot drift from the domain's lists.
const sameInvitationStatuses: Same<`${InvitationStatusValue}`, InvitationStatus> = true;
void sameInvitationStatuses;
const sameOutcomeStatuses: Same<`${BulkInvitationOutcomeStatusValue}`, BulkInvitationResult['results'][number]['status']> = true;
void sameOutcomeStatuses;

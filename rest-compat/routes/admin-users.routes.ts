import type { RestRoute } from '../route';
import { uuid } from '../schemas';

/** Administration of a company's users: owners, admins, company API keys and superadmins. */
export const adminUserRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/admin/users/:user_id/unlock',
    operationId: 'unlockUser',
    summary: "End a user's sign-in lock",
    description:
      "Clears the user's count of failed logins, which ends a sign-in lock (429 account_locked) or delay at once. " +
      "Owners and admins of the user's company, its API keys and superadmins; a member gets 403 and a user of " +
      'another company 404. was_locked tells whether sign-in was locked or delayed at the time. Audited user.unlocked.',
    tag: 'Administration',
    extension: true,
    auth: 'required',
    status: 200,
    request: { params: { type: 'object', required: ['user_id'], properties: { user_id: uuid } } },
    response: {
      type: 'object',
      required: ['user_id', 'was_locked', 'failures'],
      properties: {
        user_id: uuid,
        was_locked: { type: 'boolean', description: 'Whether sign-in was locked or delayed at the time' },
        failures: { type: 'integer', description: 'Consecutive failed logins that were cleared' },
      },
    },
    problems: { 403: 'The caller is not an owner or admin of the company', 404: 'No such user in the caller\'s company' },
    graphql: {
      document: 'mutation UnlockUser($userId: ID!) { unlockUser(userId: $userId) { userId wasLocked failures } }',
      variables: (request) => ({ userId: (request.params as { user_id: string }).user_id }),
      result: (data) => {
        const r = data.unlockUser as { userId: string; wasLocked: boolean; failures: number };
        return { user_id: r.userId, was_locked: r.wasLocked, failures: r.failures };
      },
    },
  },
];

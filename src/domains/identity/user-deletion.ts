/**
 * What a user's deletion takes with it in other domains. Their rows go by the
 * database's cascade, which tells nobody; a domain that announces its rows'
 * states (a job's progress to subscribers) registers here to announce their
 * end. Identity cannot import those domains (they require identity), so they
 * come to it.
 *
 * Each hook runs inside the deletion's transaction, before the user's row
 * goes, so it can still read what is about to be removed. It only reads, and
 * returns what to announce: the deleting service calls that once the
 * deletion has committed, and never for a deletion that did not happen.
 */
export type UserDeletionHook = (user: { userId: string; companyId: string }) => Promise<(() => void) | void> | (() => void) | void;

export class UserDeletionHooks {
  private readonly hooks: UserDeletionHook[] = [];

  add(hook: UserDeletionHook): void {
    this.hooks.push(hook);
  }

  /** Called by every path that deletes a user, in its transaction, before the delete: the announcements to make after the commit. */
  async run(user: { userId: string; companyId: string }): Promise<() => void> {
    const announcements: (() => void)[] = [];
    for (const hook of this.hooks) {
      const announce = await hook(user);
      if (announce) announcements.push(announce);
    }
    return () => announcements.forEach((announce) => announce());
  }
}

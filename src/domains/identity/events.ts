declare module '../../events/event-bus' {
  interface EventMap {
    'session.revoked': { sessionId: string; userId: string };
    /**
     * A user changed. `access` says whether what they may do or who they are
     * changed (role, status, email, password, deletion): open sockets of theirs
     * end. A rename is not an access change.
     */
    'user.changed': { userId: string; access: boolean };
    'api_key.revoked': { keyId: string; keyHash: string };
    /** A company's security policy changed; policy caches drop the company. */
    'security_policy.changed': { companyId: string; version: number };
  }
}

export {};

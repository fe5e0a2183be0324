import type { ApiKeyPrincipal, UserPrincipal } from '../auth/principal';
import { AppError } from '../errors/catalog';
import type { EventBus } from '../events/event-bus';
import type { AccessService } from '../domains/identity';
import { isPromise } from '../is-promise';

/** How often every live credential is judged again: an expired token, or a company policy that changed (here or in another process). */
export const SOCKET_RECHECK_MS = 1000;

/** Why this process ended a credential, named by the event that said so (a socket's 4401 reason). */
export type CredentialEvent = 'session_revoked' | 'credential_changed' | 'api_key_revoked';

/**
 * Something long-lived that runs on one credential (a graphql-ws socket, a
 * streamed response): it ends once that credential would be refused.
 */
export interface LiveCredential {
  principal: UserPrincipal | ApiKeyPrincipal;
  ip: string;
  /** When its access token expires (ms); null for a key or the session cookie, which end by revocation. */
  expiresAt: number | null;
  /**
   * Called once, when the credential ends: `refusal` is the problem a request
   * with it would get now; `event` names what this process saw happen (absent
   * when a recheck found it: expiry, key age, policy, another process).
   */
  end(refusal: AppError, event?: CredentialEvent): void;
}

const EVENT_REFUSALS: Record<CredentialEvent, () => AppError> = {
  session_revoked: () => new AppError('token_invalid', 'The session has ended'),
  credential_changed: () => new AppError('token_invalid', "The account's access changed; sign in again"),
  api_key_revoked: () => new AppError('token_invalid', 'The API key is invalid or has been revoked'),
};

/** A watched credential, as its owner holds it. */
export interface CredentialWatch {
  /** Judges it now (a socket does before each operation); a refusal is for the caller to act on. */
  rejudge(): AppError | null | Promise<AppError | null>;
  /** Stops watching (its socket or stream closed). */
  stop(): void;
}

interface Watched {
  live: LiveCredential;
  /** The company policy version it was last judged by. */
  policyVersion: number;
  offs: (() => void)[];
}

/**
 * The one watch over every live credential, for sockets and streams alike:
 * ended at once when this process revokes its session or key or changes its
 * user's access (the events), judged each SOCKET_RECHECK_MS for expiry and
 * the company's policy, and each `reauthenticateSeconds` against the
 * database for what another process ended.
 */
export class LiveCredentials {
  private readonly watched = new Set<Watched>();
  private readonly sweep: NodeJS.Timeout;
  private readonly reauthenticate: NodeJS.Timeout;
  private reading = false;

  constructor(
    private readonly events: EventBus,
    private readonly access: AccessService,
    private readonly log: { error: (obj: object, msg: string) => void },
    reauthenticateSeconds: number,
  ) {
    this.sweep = setInterval(() => this.recheck(), SOCKET_RECHECK_MS);
    this.sweep.unref();
    this.reauthenticate = setInterval(() => this.readEnded(), reauthenticateSeconds * 1000);
    this.reauthenticate.unref();
  }

  /** Watches `live` until it ends or is stopped. */
  watch(live: LiveCredential): CredentialWatch {
    const { principal } = live;
    const entry: Watched = { live, policyVersion: -1, offs: [] };
    const ended = (event: CredentialEvent) => this.end(entry, EVENT_REFUSALS[event](), event);
    entry.offs =
      principal.kind === 'user'
        ? [
            this.events.subscribe('session.revoked', (e) => e.sessionId === principal.sessionId && ended('session_revoked')),
            this.events.subscribe('user.changed', (e) => e.access && e.userId === principal.userId && ended('credential_changed')),
          ]
        : [this.events.subscribe('api_key.revoked', (e) => e.keyId === principal.keyId && ended('api_key_revoked'))];
    this.watched.add(entry);
    return { rejudge: () => this.judge(entry), stop: () => this.forget(entry) };
  }

  close(): void {
    clearInterval(this.sweep);
    clearInterval(this.reauthenticate);
  }

  /**
   * Whether it may still run anything: it outlives neither its access
   * token (401 token_expired), nor its company key's maximum age (401
   * token_invalid), nor its company's consent (403 ip_not_allowed,
   * mfa_enrollment_required), as an HTTP request with it would be refused.
   * Synchronous unless a policy must be read.
   */
  private judge(entry: Watched): AppError | null | Promise<AppError | null> {
    const { live } = entry;
    if (live.expiresAt !== null && Date.now() >= live.expiresAt) return new AppError('token_expired', 'The access token has expired');
    const verdict = this.access.socketRecheck(live.principal, live.ip, entry.policyVersion);
    const apply = ({ refusal, version }: { refusal: AppError | null; version: number }) => {
      entry.policyVersion = version;
      return refusal;
    };
    return isPromise(verdict) ? verdict.then(apply) : apply(verdict);
  }

  private recheck(): void {
    for (const entry of this.watched) {
      const refusal = this.judge(entry);
      if (isPromise(refusal)) refusal.then((r) => r && this.end(entry, r), (error: unknown) => this.log.error({ err: error }, 'socket recheck failed'));
      else if (refusal) this.end(entry, refusal);
    }
  }

  /** Sessions and keys ended by another process (a standalone subgraph, the CLI), within SOCKET_REAUTHENTICATE_SECONDS. */
  private readEnded(): void {
    if (this.reading || this.watched.size === 0) return;
    this.reading = true;
    const open = [...this.watched];
    this.access
      .endedCredentials(open.map((entry) => entry.live.principal))
      .then((ended) => {
        for (const entry of open) {
          const refusal = ended.get(entry.live.principal);
          if (refusal) this.end(entry, refusal);
        }
      })
      .catch((error: unknown) => this.log.error({ err: error }, 'socket credential check failed'))
      .finally(() => (this.reading = false));
  }

  private end(entry: Watched, refusal: AppError, event?: CredentialEvent): void {
    if (!this.watched.has(entry)) return;
    this.forget(entry);
    entry.live.end(refusal, event);
  }

  private forget(entry: Watched): void {
    if (!this.watched.delete(entry)) return;
    entry.offs.forEach((off) => off());
  }
}

import type { ChatRole } from './chat-message.entity';

export interface Turn {
  role: ChatRole;
  content: string;
  tokens: number;
}

/** A session's history, newest first, as of one revision of the session. */
interface Entry {
  revision: number;
  turns: readonly Turn[];
  /** Its characters, each turn counted TURN_OVERHEAD more for the object holding it. */
  chars: number;
}

/**
 * What a turn's object costs beyond its text, in characters: counted so that
 * many short turns are bounded like a few long ones (a million empty turns
 * held ~100 MB while counting as nothing).
 */
export const TURN_OVERHEAD = 100;

/**
 * Recent sessions' histories in memory, each under the session's revision.
 * Reading a history back costs about 2 µs a message in row objects alone
 * (a session near HISTORY_TURNS_MAX: most of a chat call's own overhead,
 * bench/README.md), and every chat call reads its session's. A reader looks
 * up the session's revision (one indexed row) and takes the cached turns
 * only at that revision, so a write by another process, which bumps it, is
 * never missed. This process's own writes extend the entry they began from.
 *
 * Bounded by entries and by the characters held (each turn counted
 * TURN_OVERHEAD more); the least recently used go first. Turns are shared
 * between requests: callers must not change them.
 */
export class ChatHistoryCache {
  private readonly entries = new Map<string, Entry>();
  private chars = 0;

  constructor(
    private readonly maxTurns: number,
    private readonly maxSessions = 5_000,
    private readonly maxChars = 8_000_000,
  ) {}

  /** The history at `revision`, from memory or from `load` (newest first, at most maxTurns). */
  get(sessionId: string, revision: number, load: () => Turn[]): readonly Turn[] {
    const hit = this.entries.get(sessionId);
    if (hit && hit.revision === revision) {
      // Map order is the eviction order: a hit moves to the back.
      this.entries.delete(sessionId);
      this.entries.set(sessionId, hit);
      return hit.turns;
    }
    const turns = load();
    this.put(sessionId, revision, turns);
    return turns;
  }

  /**
   * Called once a write that moved the session from `from` to `to` revision
   * has committed. The entry grows only if it was at `from`: otherwise it
   * missed a write (another process's, a concurrent one) and is dropped.
   */
  appended(sessionId: string, from: number, to: number, newestFirst: readonly Turn[]): void {
    const entry = this.entries.get(sessionId);
    if (!entry) return;
    if (entry.revision !== from) {
      this.drop(sessionId);
      return;
    }
    const turns = [...newestFirst, ...entry.turns];
    let chars = entry.chars + sumChars(newestFirst);
    while (turns.length > this.maxTurns) chars -= turns.pop()!.content.length + TURN_OVERHEAD;
    this.put(sessionId, to, turns, chars);
  }

  private put(sessionId: string, revision: number, turns: readonly Turn[], chars = sumChars(turns)): void {
    this.drop(sessionId);
    // A history larger than the whole budget is read from the database each time.
    if (chars > this.maxChars) return;
    this.entries.set(sessionId, { revision, turns, chars });
    this.chars += chars;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxSessions && this.chars <= this.maxChars) break;
      this.entries.delete(oldest);
      this.chars -= entry.chars;
    }
  }

  private drop(sessionId: string): void {
    const entry = this.entries.get(sessionId);
    if (!entry) return;
    this.entries.delete(sessionId);
    this.chars -= entry.chars;
  }
}

function sumChars(turns: readonly Turn[]): number {
  let chars = 0;
  for (const turn of turns) chars += turn.content.length + TURN_OVERHEAD;
  return chars;
}

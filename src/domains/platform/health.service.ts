import type { ReadStore } from '../../db/read-store';
import { CURRENT_API_VERSION } from '../../version';

export interface Health {
  status: 'ok' | 'degraded';
  version: string;
  database: 'ok' | 'unavailable';
  uptimeSeconds: number;
}

export class HealthService {
  private readonly startedAt = Date.now();

  constructor(private readonly reads: ReadStore) {}

  /** Synchronous: one prepared statement on the read connection. */
  check(): Health {
    let database: Health['database'] = 'ok';
    try {
      this.reads.get('select 1');
    } catch {
      database = 'unavailable';
    }
    return {
      status: database === 'ok' ? 'ok' : 'degraded',
      version: CURRENT_API_VERSION,
      database,
      uptimeSeconds: Math.floor((Date.now() - this.startedAt) / 1000),
    };
  }
}

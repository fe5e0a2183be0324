import type { Orm } from '../db/orm';
import { CURRENT_API_VERSION } from '../version';
import { currentEm } from '../db/unit-of-work';

export interface Health {
  status: 'ok' | 'degraded';
  version: string;
  database: 'ok' | 'unavailable';
  uptimeSeconds: number;
}

export class HealthService {
  private readonly startedAt = Date.now();

  constructor(private readonly orm: Orm) {}

  async check(): Promise<Health> {
    let database: Health['database'] = 'ok';
    try {
      await currentEm(this.orm).getConnection().execute('select 1');
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

import { Session } from 'node:inspector';

/**
 * One full garbage collection, through an in-process inspector session
 * (no --expose-gc flag, no port opened). V8 sizes its heap lazily: while
 * memory is plentiful it lets a process that allocates fast (a long bulk job,
 * a burst of large answers) grow far past what it holds alive. The callers
 * ask for one when that growth is worth a pause of a few tens of milliseconds.
 */
export function collectGarbage(): Promise<void> {
  return new Promise((resolve, reject) => {
    const session = new Session();
    session.connect();
    session.post('HeapProfiler.collectGarbage', (error) => {
      // Not from inside the session's own callback: disconnecting there hangs the thread.
      setImmediate(() => session.disconnect());
      if (error) reject(error);
      else resolve();
    });
  });
}

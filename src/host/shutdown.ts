import fp from 'fastify-plugin';

/** How often a stopping server closes the connections that went idle (a finished stream's keep-alive connection). */
const IDLE_SWEEP_MS = 100;
/**
 * A clean stop that does not wait on its clients: fastify's close waits for
 * every connection to drain before its onClose hooks run, so the job worker
 * (stopped in onClose) went on claiming and running jobs while a rows stream
 * was open, and a connection left idle after its response waited for its
 * keep-alive timeout. Before the HTTP server closes (preClose): streams are
 * told to end (`app.stopping`), the worker stops claiming and aborts its
 * handlers (their jobs are handed back), and from then on connections that
 * go idle are closed at once, any still busy after SHUTDOWN_GRACE_SECONDS
 * too.
 */
export const shutdownPlugin = fp(
  async (app) => {
    const stopping = new AbortController();
    app.decorate('stopping', stopping.signal);
    let sweep: NodeJS.Timeout | undefined;
    let deadline: NodeJS.Timeout | undefined;
    app.addHook('preClose', async () => {
      stopping.abort();
      const worker = app.kernel.worker.stop();
      const server = app.server;
      sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
      sweep.unref();
      deadline = setTimeout(() => server.closeAllConnections(), app.config.shutdownGraceSeconds * 1000);
      deadline.unref();
      await worker;
    });
    app.addHook('onClose', async () => {
      clearInterval(sweep);
      clearTimeout(deadline);
    });
  },
  { name: 'shutdown' },
);

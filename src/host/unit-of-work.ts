import fp from 'fastify-plugin';
import { runInUnitOfWork } from '../db/unit-of-work';

/** One MikroORM EntityManager fork per request, created on first use. */
export const unitOfWorkPlugin = fp(
  async (app) => {
    app.addHook('onRequest', (_request, _reply, done) => {
      runInUnitOfWork(app.kernel.orm, done);
    });
  },
  { name: 'atrium-unit-of-work' },
);

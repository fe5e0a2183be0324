import fp from 'fastify-plugin';
import { RequestContext } from '@mikro-orm/core';

/** One MikroORM EntityManager fork per request. */
export const unitOfWorkPlugin = fp(
  async (app) => {
    app.addHook('onRequest', (_request, _reply, done) => {
      RequestContext.create(app.services.orm.em, done);
    });
  },
  { name: 'atrium-unit-of-work' },
);

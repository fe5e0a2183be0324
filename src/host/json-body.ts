import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type { AppError } from '../errors/catalog';
import { parseJsonBody, refuseContentCoding } from '../json-body';

/**
 * The main server's `application/json` parser, REST and POST /graphql alike.
 * A body in a content coding is 415 here, and in the multipart readers
 * (rest-compat/multipart.ts): the parsers are where a body is read, so no
 * request pays for the check in a hook of its own.
 */
export const jsonBodyPlugin = fp(
  async (app) => {
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request: FastifyRequest, body: Buffer, done) => {
      let parsed: unknown;
      try {
        refuseContentCoding(request.headers);
        parsed = parseJsonBody(body, request.headers['content-type']);
      } catch (error) {
        return done(error as AppError, undefined);
      }
      // The bytes as sent, for the one route that must verify a signature over them (the billing webhook).
      request.rawBody = body;
      done(null, parsed);
    });
  },
  { name: 'atrium-json-body' },
);

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body's bytes as received (set by the JSON parser). */
    rawBody?: Buffer;
  }
}

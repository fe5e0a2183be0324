import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type { AppError } from '../errors/catalog';
import { parseJsonBody, refuseContentCoding } from '../json-body';

/** Methods whose requests carry a body to read. */
const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The main server's `application/json` parser, REST and POST /graphql alike;
 * and on every route that reads a body (JSON, multipart, the webhook's), a
 * body in a content coding is 415 before anything reads it. Registered per
 * route, so a GET pays nothing.
 */
export const jsonBodyPlugin = fp(
  async (app) => {
    app.addHook('onRoute', (route) => {
      if (![route.method].flat().some((method) => WITH_BODY.has(method))) return;
      const preParsing = (request: FastifyRequest, _reply: unknown, payload: unknown, done: (error: Error | null, payload?: unknown) => void) => {
        try {
          refuseContentCoding(request.headers);
        } catch (error) {
          return done(error as AppError);
        }
        done(null, payload);
      };
      route.preParsing = [preParsing, ...[route.preParsing ?? []].flat()] as typeof route.preParsing;
    });
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request: FastifyRequest, body: Buffer, done) => {
      let parsed: unknown;
      try {
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

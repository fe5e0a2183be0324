import type Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { UUID_PATTERN } from './ids';

/** ajv-formats' formats, with `uuid` as ids are written (ajv-formats' own also takes a `urn:uuid:` prefix, which would name no row): one definition for REST's validation and GraphQL's bounds. */
export function withFormats(ajv: Ajv): Ajv {
  addFormats(ajv);
  ajv.addFormat('uuid', UUID_PATTERN);
  return ajv;
}

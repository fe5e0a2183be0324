import type Ajv from 'ajv';
import addFormats from 'ajv-formats';

/** A UUID as Atrium stores and names rows by it: 36 characters, any case; no `urn:uuid:` prefix, which would name no row. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** ajv-formats' formats, with `uuid` as ids are written: one definition for REST's validation and GraphQL's bounds. */
export function withFormats(ajv: Ajv): Ajv {
  addFormats(ajv);
  ajv.addFormat('uuid', UUID);
  return ajv;
}

import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { withFormats } from '../json-formats';

type Schema = { type?: unknown; items?: Schema; properties?: Record<string, Schema> };

/** An integer as written in a query or path: decimal digits, or a nonzero one negated (the schema's minimum then says whether that is allowed). */
const INTEGER_FORM = /^(?:\d+|-[1-9]\d*)$/;

const isInteger = (schema: Schema | undefined) =>
  schema !== undefined && (schema.type === 'integer' || (Array.isArray(schema.type) && schema.type.includes('integer')));

/** The integer members of a query or path schema (also arrays of integers). */
function integerMembers(schema: Schema): [name: string, list: boolean][] {
  const members: [string, boolean][] = [];
  for (const [name, member] of Object.entries(schema.properties ?? {})) {
    if (isInteger(member)) members.push([name, false]);
    else if (isInteger(member.items)) members.push([name, true]);
  }
  return members;
}

/**
 * Query and path values arrive as text and Ajv coerces them, but its
 * coercion reads any JavaScript number: `1e3`, `1.0`, `0x10` and ` 5` would
 * all pass as integers. A member declared `integer` must be written in
 * decimal digits; anything else fails as a wrong type, before coercion.
 * A negative one is an integer: where the schema has a minimum, it fails that.
 */
function digitsOnly(validate: ValidateFunction, members: [string, boolean][]): ValidateFunction {
  const checked = ((data: Record<string, unknown> | null, context?: object) => {
    const wrong: ErrorObject[] = [];
    if (data !== null && typeof data === 'object') {
      for (const [name, list] of members) {
        const value = data[name];
        const values = list && Array.isArray(value) ? value : [value];
        if (values.some((v) => typeof v === 'string' && !INTEGER_FORM.test(v))) {
          wrong.push({ keyword: 'type', instancePath: `/${name}`, schemaPath: `#/properties/${name}/type`, params: { type: 'integer' }, message: 'must be integer' });
        }
      }
    }
    const valid = (validate as (data: unknown, context?: object) => boolean)(data, context);
    if (!wrong.length) {
      checked.errors = validate.errors;
      return valid;
    }
    const paths = new Set(wrong.map((e) => e.instancePath));
    checked.errors = [...wrong, ...(validate.errors ?? []).filter((e) => !paths.has(e.instancePath))];
    return false;
  }) as ValidateFunction;
  return checked;
}

/**
 * The validator compiler of every route: a body is never coerced (a string
 * stays a string); query and path values are, integers from digits only.
 */
export function validatorCompiler() {
  const common = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false } as const;
  // Verbose: a body's errors carry the value that failed, so a null is told apart from a wrong type.
  const strict = withFormats(new Ajv({ ...common, coerceTypes: false, verbose: true }));
  const coercing = withFormats(new Ajv({ ...common, coerceTypes: 'array' }));
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => {
    if (httpPart === 'body') return strict.compile(schema);
    const validate = coercing.compile(schema);
    const members = httpPart === 'querystring' || httpPart === 'params' ? integerMembers(schema as Schema) : [];
    return members.length ? digitsOnly(validate, members) : validate;
  };
}

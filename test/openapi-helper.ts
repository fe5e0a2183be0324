import { randomUUID } from 'node:crypto';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/** The parts of an operation of /openapi.json the contract tests read. */
export interface Operation {
  parameters?: ({ in?: string; name?: string; schema?: { format?: string; maximum?: number } } | { $ref: string })[];
  requestBody?: { content: Record<string, unknown> };
  security?: Record<string, unknown>[];
  responses: Record<string, { description: string; content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
}

export type Doc = { paths: Record<string, Record<string, Operation>>; components: Record<string, unknown> };

/**
 * Each operation of the document with its path filled in: from `values` (a
 * parameter's name to a real resource's id) where given, else a uuid or a
 * name no resource has; `long` fills every parameter with an over-long text.
 */
export function operations(doc: Doc) {
  const out: { method: string; path: string; url: (long?: boolean, values?: Record<string, string>) => string; operation: Operation }[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const params = (operation.parameters ?? []).filter((p): p is { in: string; name: string; schema?: { format?: string } } => 'in' in p && p.in === 'path');
      const url = (long = false, values: Record<string, string> = {}) =>
        '/v1' +
        path.replace(/\{(\w+)\}/g, (_, name: string) => {
          if (long) return 'a'.repeat(101);
          if (values[name] !== undefined) return encodeURIComponent(values[name]);
          return params.find((p) => p.name === name)?.schema?.format === 'uuid' ? randomUUID() : 'nothing-here';
        });
      out.push({ method, path, url, operation });
    }
  }
  return out;
}

/** The schema with every object that lists its properties and says nothing of others closed to them. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (!schema || typeof schema !== 'object') return schema;
  const out = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === 'properties' ? Object.fromEntries(Object.entries(v as object).map(([p, s]) => [p, closed(s)])) : closed(v)]));
  if ('properties' in out && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
}

/**
 * The schemas of the document as checks of a body, each compiled once
 * (references resolved in the document's components). `undeclared` also
 * refuses a member an object's schema does not list, where the schema is
 * silent on others: a client generated from the document never sees it.
 */
export function bodyChecks(doc: Doc, options: { undeclared?: boolean } = {}): (schema: unknown) => ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi.json', components: options.undeclared ? closed(doc.components) : doc.components });
  const compiled = new Map<string, ValidateFunction>();
  return (schema) => {
    const text = JSON.stringify(schema).replace(/"#\/components\//g, '"openapi.json#/components/');
    let check = compiled.get(text);
    if (!check) compiled.set(text, (check = ajv.compile((options.undeclared ? closed(JSON.parse(text)) : JSON.parse(text)) as object)));
    return check;
  };
}

import {
  GraphQLError,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  getNamedType,
  getNullableType,
  isListType,
  isObjectType,
  isInterfaceType,
  isEnumType,
  isInputObjectType,
  parse,
  valueFromASTUntyped,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { AppError } from '../../src/errors/catalog';
import type { GraphqlLimitsConfig } from '../../src/kernel/config';
import { MAX_PER_PAGE } from '../../src/pagination';
import { fieldPolicy, type FieldPolicy } from './access';

export type OperationLimits = Omit<GraphqlLimitsConfig, 'introspection'>;

/** A list whose size no argument states (models, plans, connectors) is costed as this many items. */
export const ASSUMED_LIST_SIZE = 10;

/** The argument that sizes a page of a list (the Page envelope, subgraphs/page.ts). */
const PAGE_SIZE_ARGUMENT = 'perPage';

/** One root field of an operation, by response key (an alias is a field of its own). */
export interface RootField {
  key: string;
  /** The field's name (several keys may alias one field). */
  name: string;
  /** Undefined for introspection fields and fields the schema does not have (the validator refuses those). */
  policy: FieldPolicy | undefined;
}

/** What one operation asks for, measured before it runs. */
export interface MeasuredOperation {
  kind: OperationDefinitionNode['operation'];
  name: string | undefined;
  rootFields: readonly RootField[];
  /** Selects __schema or __type. */
  introspection: boolean;
  depth: number;
  /** Estimated cost with page sizes given as literals or defaults; variables at their worst (largest page). */
  cost: number;
  /** The cost depends on variables: measure again with the request's values. */
  costUsesVariables: boolean;
  node: OperationDefinitionNode;
}

/** A document read once: parsed within the token cap and each operation measured. */
export interface MeasuredDocument {
  document: DocumentNode;
  aliases: number;
  operations: readonly MeasuredOperation[];
}

export type Variables = Readonly<Record<string, unknown>> | null | undefined;

/** A refusal naming the cap that was passed, its limit and what the operation asked. */
export function tooComplex(cap: keyof OperationLimits, limit: number, actual: number): AppError {
  const what: Record<keyof OperationLimits, string> = {
    maxTokens: 'tokens',
    maxDepth: 'depth',
    maxAliases: 'aliases',
    maxRootFields: 'root fields',
    maxCost: 'estimated cost',
  };
  // A parse stopped at the cap knows no count: "more than" the limit, not a number.
  const measured = Number.isFinite(actual) ? `${actual} > ${limit}` : `more than ${limit}`;
  return new AppError('query_too_complex', `The operation exceeds the limit on ${what[cap]}: ${measured}`, {
    extra: { limit: what[cap], max: limit, ...(Number.isFinite(actual) ? { actual } : {}) },
  });
}

/**
 * Reads a GraphQL document the way the policy layer needs it: parsed with a
 * bounded number of tokens (so no later walk, here or in the validator, can
 * recurse without end), then each operation measured: depth, aliases, root
 * fields and an estimated cost. Nothing here executes or validates; unknown
 * fields and fragment cycles are left to the validator and cost nothing.
 */
export class OperationMeter {
  constructor(
    private readonly schema: GraphQLSchema,
    readonly limits: OperationLimits,
  ) {}

  /** Parses within the token cap: a syntax error is a 400 bad_request, too many tokens a 400 query_too_complex. */
  parse(text: string): DocumentNode {
    try {
      return parse(text, { maxTokens: this.limits.maxTokens });
    } catch (error) {
      const message = (error as Error).message;
      if (/contains more th(?:at|an) \d+ tokens/.test(message)) throw tooComplex('maxTokens', this.limits.maxTokens, Infinity);
      throw new AppError('bad_request', error instanceof GraphQLError ? message : 'The query is not a GraphQL document');
    }
  }

  /** Measures every operation of a document and refuses the first cap it passes (cost with the worst variables aside). */
  measure(document: DocumentNode): MeasuredDocument {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
    const aliases = countAliases(document);
    if (aliases > this.limits.maxAliases) throw tooComplex('maxAliases', this.limits.maxAliases, aliases);
    const operations: MeasuredOperation[] = [];
    for (const d of document.definitions) {
      if (d.kind !== Kind.OPERATION_DEFINITION) continue;
      const root = this.rootType(d);
      const rootFields = collectRootFields(d.selectionSet, root, fragments);
      if (rootFields.fields.length > this.limits.maxRootFields) {
        throw tooComplex('maxRootFields', this.limits.maxRootFields, rootFields.fields.length);
      }
      // The whole schema is one answer, tens of milliseconds of work that no field of ours
      // divides into turns: once per operation is all a client needs.
      const schemas = rootFields.fields.filter((f) => f.name === '__schema').length;
      if (schemas > 1) {
        throw new AppError('query_too_complex', `An operation may select __schema once, not ${schemas} times`, {
          extra: { limit: '__schema', max: 1, actual: schemas },
        });
      }
      const walk = new CostWalk(this.schema, fragments, undefined);
      const measured = root ? walk.selectionSet(d.selectionSet, root, undefined) : { cost: 0, depth: 0 };
      if (measured.depth > this.limits.maxDepth) throw tooComplex('maxDepth', this.limits.maxDepth, measured.depth);
      const operation: MeasuredOperation = {
        kind: d.operation,
        name: d.name?.value,
        rootFields: rootFields.fields,
        introspection: rootFields.introspection,
        depth: measured.depth,
        cost: measured.cost,
        costUsesVariables: walk.usedVariables,
        node: d,
      };
      // A cost over the cap with the worst variables may still fit with the request's own.
      if (!operation.costUsesVariables) this.checkCost(operation.cost);
      operations.push(operation);
    }
    return { document, aliases, operations };
  }

  /** The operation's cost with the request's variables; over the cap it is refused. */
  costWith(measured: MeasuredDocument, operation: MeasuredOperation, variables: Variables): number {
    if (!operation.costUsesVariables) return operation.cost;
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const d of measured.document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
    const root = this.rootType(operation.node);
    if (!root) return operation.cost;
    // A variable the request leaves out takes its declared default, as execution will give it.
    const given = { ...variableDefaults(operation.node), ...(variables ?? {}) };
    return this.checkCost(new CostWalk(this.schema, fragments, given).selectionSet(operation.node.selectionSet, root, undefined).cost);
  }

  private checkCost(cost: number): number {
    if (cost > this.limits.maxCost) throw tooComplex('maxCost', this.limits.maxCost, cost);
    return cost;
  }

  private rootType(operation: OperationDefinitionNode): GraphQLNamedType | null | undefined {
    if (operation.operation === 'query') return this.schema.getQueryType();
    if (operation.operation === 'mutation') return this.schema.getMutationType();
    return this.schema.getSubscriptionType();
  }
}

/** Aliased fields as written; an alias in a fragment spread twice is still one line of the document. */
function countAliases(document: DocumentNode): number {
  let count = 0;
  // An explicit stack: the document may nest deeply (the depth cap is checked after this).
  const stack: SelectionSetNode[] = [];
  for (const d of document.definitions) {
    if (d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION) stack.push(d.selectionSet);
  }
  while (stack.length) {
    for (const selection of stack.pop()!.selections) {
      if (selection.kind === Kind.FIELD && selection.alias) count++;
      if (selection.kind !== Kind.FRAGMENT_SPREAD && selection.selectionSet) stack.push(selection.selectionSet);
    }
  }
  return count;
}

/** The root fields of an operation by response key (fields of one key merge into one execution). */
function collectRootFields(
  set: SelectionSetNode,
  root: GraphQLNamedType | null | undefined,
  fragments: Map<string, FragmentDefinitionNode>,
): { fields: RootField[]; introspection: boolean } {
  const byKey = new Map<string, RootField>();
  let introspection = false;
  const fields = root && isObjectType(root) ? root.getFields() : {};
  const seen = new Set<string>();
  const visit = (selections: SelectionSetNode) => {
    for (const selection of selections.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (name === '__schema' || name === '__type') introspection = true;
        if (name === '__typename') continue;
        const key = selection.alias?.value ?? name;
        if (!byKey.has(key)) byKey.set(key, { key, name, policy: fields[name] ? fieldPolicy(fields[name]) : undefined });
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        visit(selection.selectionSet);
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) visit(fragment.selectionSet);
      }
    }
  };
  visit(set);
  return { fields: [...byKey.values()], introspection };
}

interface Measure {
  cost: number;
  depth: number;
}

/**
 * Cost and depth of a selection set. Every field costs 1; a list multiplies
 * what it selects by its size: the page size of the paged field around it
 * (`perPage`, as a literal, a variable or its default), else ASSUMED_LIST_SIZE.
 * A fragment is measured once per page-size context, so spreading one
 * fragment many times cannot make the walk itself expensive.
 */
class CostWalk {
  usedVariables = false;
  private readonly memo = new Map<string, Measure>();
  private readonly visiting = new Set<string>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: Map<string, FragmentDefinitionNode>,
    /** The request's variables; undefined measures the worst case (the largest page). */
    private readonly variables: Variables | undefined,
  ) {}

  selectionSet(set: SelectionSetNode, parent: GraphQLNamedType, pageSize: number | undefined): Measure {
    let cost = 0;
    let depth = 0;
    for (const selection of set.selections) {
      let measured: Measure;
      if (selection.kind === Kind.FIELD) {
        measured = this.field(selection, parent, pageSize);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? this.schema.getType(selection.typeCondition.name.value) : parent;
        measured = type ? this.selectionSet(selection.selectionSet, type, pageSize) : { cost: 0, depth: 0 };
      } else {
        measured = this.fragment(selection.name.value, pageSize);
      }
      cost += measured.cost;
      depth = Math.max(depth, measured.depth);
    }
    return { cost, depth };
  }

  private fragment(name: string, pageSize: number | undefined): Measure {
    const key = `${name}\u0000${pageSize ?? ''}`;
    const known = this.memo.get(key);
    if (known) return known;
    const fragment = this.fragments.get(name);
    // An unknown fragment or a cycle: the validator refuses the document.
    if (!fragment || this.visiting.has(name)) return { cost: 0, depth: 0 };
    const type = this.schema.getType(fragment.typeCondition.name.value);
    if (!type) return { cost: 0, depth: 0 };
    this.visiting.add(name);
    const measured = this.selectionSet(fragment.selectionSet, type, pageSize);
    this.visiting.delete(name);
    this.memo.set(key, measured);
    return measured;
  }

  private field(node: FieldNode, parent: GraphQLNamedType, pageSize: number | undefined): Measure {
    const name = node.name.value;
    if (name === '__typename') return { cost: 0, depth: 0 };
    const definition = fieldOf(parent, name, this.schema);
    if (!definition) return { cost: 0, depth: 0 };
    let multiplier = 1;
    let type = getNullableType(definition.type);
    // A page size asked of this field applies to the lists it selects (Page.items), or to itself if it is the list.
    const ownPage = this.pageSize(node, definition);
    while (isListType(type)) {
      multiplier *= ownPage ?? pageSize ?? ASSUMED_LIST_SIZE;
      pageSize = undefined;
      type = getNullableType(type.ofType);
    }
    if (!node.selectionSet) return { cost: 1, depth: 1 };
    const inner = this.selectionSet(node.selectionSet, getNamedType(definition.type), ownPage ?? pageSize);
    // The whole schema's description is answered from memory, in proportion to the schema's size.
    if (definition === SchemaMetaFieldDef) return { cost: 1 + schemaSize(this.schema), depth: 1 + inner.depth };
    return { cost: 1 + multiplier * inner.cost, depth: 1 + inner.depth };
  }

  /** The page size this field asks for, bounded as the resolver bounds it. */
  private pageSize(node: FieldNode, definition: GraphQLField<unknown, unknown>): number | undefined {
    const argument = definition.args.find((a) => a.name === PAGE_SIZE_ARGUMENT);
    if (!argument) return undefined;
    const given = node.arguments?.find((a) => a.name.value === PAGE_SIZE_ARGUMENT)?.value;
    const value = (given && this.valueOf(given)) ?? argument.defaultValue;
    const size = typeof value === 'number' && Number.isFinite(value) ? Math.floor(value) : MAX_PER_PAGE;
    // Out of range is refused by the resolver before any work: cost it as the most it could do.
    return Math.min(Math.max(size, 1), MAX_PER_PAGE);
  }

  private valueOf(node: ValueNode): unknown {
    if (node.kind !== Kind.VARIABLE) return valueFromASTUntyped(node);
    this.usedVariables = true;
    // Measuring the worst case: the largest page the variable could ask for.
    return this.variables === undefined ? MAX_PER_PAGE : this.variables?.[node.name.value];
  }
}

/** The defaults an operation declares for its variables (`query($p: Int = 100)`). */
function variableDefaults(operation: OperationDefinitionNode): Record<string, unknown> {
  const defaults: Record<string, unknown> = {};
  for (const definition of operation.variableDefinitions ?? []) {
    if (definition.defaultValue) defaults[definition.variable.name.value] = valueFromASTUntyped(definition.defaultValue);
  }
  return defaults;
}

const schemaSizes = new WeakMap<GraphQLSchema, number>();

/**
 * What describing a schema costs: its types, their fields, arguments, enum
 * values and input fields, each described field counted twice (itself and its
 * type reference, which the standard query follows several levels down),
 * as measured against a page of records (bench/abuse.ts).
 */
function schemaSize(schema: GraphQLSchema): number {
  let size = schemaSizes.get(schema);
  if (size === undefined) {
    size = 0;
    for (const type of Object.values(schema.getTypeMap())) {
      size++;
      if (isObjectType(type) || isInterfaceType(type)) {
        for (const field of Object.values(type.getFields())) size += 2 + field.args.length;
      } else if (isEnumType(type)) size += type.getValues().length;
      else if (isInputObjectType(type)) size += Object.keys(type.getFields()).length;
    }
    schemaSizes.set(schema, size);
  }
  return size;
}

function fieldOf(parent: GraphQLNamedType, name: string, schema: GraphQLSchema): GraphQLField<unknown, unknown> | undefined {
  if (parent === schema.getQueryType()) {
    if (name === '__schema') return SchemaMetaFieldDef;
    if (name === '__type') return TypeMetaFieldDef;
  }
  return isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[name] : undefined;
}

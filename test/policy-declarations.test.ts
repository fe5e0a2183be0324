import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSchema } from 'graphql';
import { enforceFieldPolicies } from '../subgraphs/policy/enforce';
import { fieldPolicy } from '../subgraphs/policy/access';
import { buildSupergraph } from '../subgraphs/supergraph';

test('a root field without a declared access policy stops the subgraph build', () => {
  const schema = buildSchema('type Query { open: String }');
  assert.throws(() => enforceFieldPolicies(schema, 'test'), /Query\.open declares no access policy/);
});

test('every root field of the served schema declares its access policy', async () => {
  const { schema } = await buildSupergraph();
  const undeclared: string[] = [];
  for (const root of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]) {
    for (const field of Object.values(root?.getFields() ?? {})) {
      if (!fieldPolicy(field)) undeclared.push(`${root!.name}.${field.name}`);
    }
  }
  assert.deepEqual(undeclared, []);
});

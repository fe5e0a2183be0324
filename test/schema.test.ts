import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { ESLint } from 'eslint';
import { buildSubgraphs, compose } from '../subgraphs/supergraph';
import { subgraphNames } from '../subgraphs/build-subgraph';
import { checkArtifacts, SCHEMA_DIR } from '../src/schema-cli';
import { build } from './helper';

const REPO_ROOT = path.resolve(__dirname, '../..');
const readArtifact = (name: string) => fs.readFileSync(path.join(SCHEMA_DIR, name), 'utf8');

test('/graphql serves exactly the composed API schema', async (t) => {
  const app = await build(t);
  await app.ready();
  const served = `${printSchema(lexicographicSortSchema(app.graphql.schema))}\n`;
  assert.equal(served, readArtifact('api.graphql'), 'the served schema differs from schema/api.graphql');
  const { apiSdl } = compose(await buildSubgraphs());
  assert.equal(served, `${apiSdl}\n`, 'the served schema differs from the freshly composed API schema');
});

test('the supergraph joins all four subgraphs', () => {
  const supergraph = readArtifact('supergraph.graphql');
  for (const name of subgraphNames) {
    assert.match(
      supergraph,
      new RegExp(`^\\s*${name.toUpperCase()} @join__graph\\(name: "${name}", url: "[^"]+"\\)`, 'm'),
      `join__Graph has no ${name}`,
    );
    assert.ok(fs.existsSync(path.join(SCHEMA_DIR, `${name}.graphql`)), `schema/${name}.graphql is missing`);
  }
  const company = supergraph.split('\n').find((line) => line.startsWith('type Company '));
  assert.ok(company, 'the supergraph has no Company type');
  // Company is an entity keyed by id; billing extends it with plan.
  assert.ok(company.includes('@join__type(graph: BILLING, key: "id")'), company);
  assert.ok(company.includes('@join__type(graph: IDENTITY, key: "id")'), company);
});

test('the committed schema artifacts are up to date', async () => {
  const problems = await checkArtifacts();
  assert.deepEqual(
    problems,
    [],
    `out of date: ${problems.map((p) => `${p.file} (${p.problem})`).join(', ')}; run npm run schema:write`,
  );
});

test('lint keeps transports out of the core', async () => {
  const eslint = new ESLint({ cwd: REPO_ROOT });
  const code = "import Fastify from 'fastify';\n\nexport const app = Fastify();\n";
  const restricted = (results: ESLint.LintResult[]) =>
    results.flatMap((r) => r.messages).filter((m) => m.ruleId === 'no-restricted-imports');

  const [core] = await eslint.lintText(code, { filePath: path.join(REPO_ROOT, 'src/domains/x.ts') });
  assert.equal(restricted([core]).length, 1, JSON.stringify(core.messages));
  assert.match(restricted([core])[0].message, /src\/ is the transport-free core; only src\/host may import transports/);

  for (const allowed of ['src/host/x.ts', 'src/app.ts', 'subgraphs/x.ts']) {
    const results = await eslint.lintText(code, { filePath: path.join(REPO_ROOT, allowed) });
    assert.deepEqual(restricted(results), [], `${allowed} may import transports`);
  }

  for (const specifier of ['mercurius', 'graphql/language', '@fastify/cors', '@apollo/subgraph', 'type-graphql', '../../subgraphs/context']) {
    const results = await eslint.lintText(`import * as m from '${specifier}';\n\nexport const x = m;\n`, {
      filePath: path.join(REPO_ROOT, 'src/domains/feedback/x.ts'),
    });
    assert.equal(restricted(results).length, 1, `${specifier} should be restricted in src/domains`);
  }
});

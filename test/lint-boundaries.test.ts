import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';

/**
 * The architecture rules are lint rules (eslint.config.mjs): each fixture is a
 * deliberate violation, linted as if it stood at the path its first line
 * names, and must fail with the rule that guards it.
 */
const ROOT = path.resolve(__dirname, '../..');
const FIXTURES = path.join(ROOT, 'test/fixtures/lint');

async function lintFixture(name: string) {
  const text = fs.readFileSync(path.join(FIXTURES, name), 'utf8');
  const as = /^\/\/ as: (\S+)/.exec(text)?.[1];
  assert.ok(as, `${name} names no path`);
  const eslint = new ESLint({ cwd: ROOT });
  const [result] = await eslint.lintText(text, { filePath: path.join(ROOT, as) });
  return result!.messages.map((m) => ({ rule: m.ruleId, message: m.message }));
}

const violations: [string, string, RegExp][] = [
  ['domain-reaches-into-another.fixture', 'atrium/layers', /only through its index\.ts/],
  ['kernel-imports-a-domain.fixture', 'atrium/layers', /kernel code may not import a domain/],
  ['subgraph-imports-the-host.fixture', 'atrium/layers', /graphql code may not import host/],
  ['domain-reads-process-env.fixture', 'no-restricted-properties', /src\/config\.ts/],
  ['domain-imports-a-transport.fixture', 'no-restricted-imports', /transport-free core/],
];

for (const [fixture, rule, message] of violations) {
  test(`lint refuses ${fixture.replace('.fixture', '').replaceAll('-', ' ')}`, async () => {
    const found = await lintFixture(fixture);
    assert.ok(
      found.some((m) => m.rule === rule && message.test(m.message)),
      `expected ${rule} matching ${message}, got ${JSON.stringify(found)}`,
    );
  });
}

test('lint allows a domain to use the kernel and another domain through its index.ts', async () => {
  assert.deepEqual(await lintFixture('allowed.fixture'), []);
});

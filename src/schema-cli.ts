import fs from 'node:fs';
import path from 'node:path';
import { buildSubgraphs, buildSupergraph, compose } from '../subgraphs/supergraph';
import { buildOpenApi } from '../rest-compat/openapi';
import { compileRoutes, routeTable } from '../rest-compat';

/**
 * Generates the committed schema artifacts under schema/:
 *   <subgraph>.graphql  each subgraph's Federation 2 SDL
 *   supergraph.graphql  the composed supergraph (what a federation gateway reads)
 *   api.graphql         the client-facing API schema (what /graphql serves)
 *   openapi.json        the REST-compat OpenAPI document
 *
 *   node dist/src/schema-cli.js write   (npm run schema:write)
 *   node dist/src/schema-cli.js check   (npm run schema:check; exit 1 on any difference)
 */

/** The repository's schema/ folder (this file runs from dist/src/). */
export const SCHEMA_DIR = path.resolve(__dirname, '../../schema');

const withNewline = (text: string) => (text.endsWith('\n') ? text : `${text}\n`);

/** Every artifact, file name to contents, in a stable order. */
export async function generateArtifacts(): Promise<Map<string, string>> {
  const subgraphs = await buildSubgraphs();
  const { supergraphSdl, apiSdl } = compose(subgraphs);
  const files = new Map<string, string>();
  for (const subgraph of subgraphs) files.set(`${subgraph.name}.graphql`, withNewline(subgraph.sdl));
  files.set('supergraph.graphql', withNewline(supergraphSdl));
  files.set('api.graphql', withNewline(apiSdl));
  const { schema } = await buildSupergraph();
  files.set('openapi.json', `${JSON.stringify(buildOpenApi(compileRoutes(schema, routeTable)), null, 2)}\n`);
  return files;
}

export interface ArtifactProblem {
  file: string;
  problem: 'missing' | 'differs';
}

/** Regenerates in memory and compares with the files in `dir`; empty means up to date. */
export async function checkArtifacts(dir = SCHEMA_DIR): Promise<ArtifactProblem[]> {
  const problems: ArtifactProblem[] = [];
  for (const [file, expected] of await generateArtifacts()) {
    const target = path.join(dir, file);
    if (!fs.existsSync(target)) problems.push({ file, problem: 'missing' });
    else if (fs.readFileSync(target, 'utf8') !== expected) problems.push({ file, problem: 'differs' });
  }
  return problems;
}

/** Writes every artifact into `dir`; returns the files written. */
export async function writeArtifacts(dir = SCHEMA_DIR): Promise<string[]> {
  fs.mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const [file, contents] of await generateArtifacts()) {
    fs.writeFileSync(path.join(dir, file), contents);
    written.push(file);
  }
  return written;
}

async function main(command: string | undefined): Promise<number> {
  const shown = path.relative(process.cwd(), SCHEMA_DIR) || '.';
  if (command === 'write') {
    for (const file of await writeArtifacts()) console.log(`wrote ${path.join(shown, file)}`);
    return 0;
  }
  if (command === 'check') {
    const problems = await checkArtifacts();
    if (problems.length === 0) {
      console.log(`schema artifacts in ${shown}/ are up to date`);
      return 0;
    }
    console.error('Schema artifacts are out of date:');
    for (const { file, problem } of problems) console.error(`  ${path.join(shown, file)}: ${problem}`);
    console.error('Run `npm run schema:write` and commit the result.');
    return 1;
  }
  console.error('usage: schema-cli write|check');
  return 2;
}

if (require.main === module) {
  main(process.argv[2]).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}

// ESLint 9 flat config: @eslint/js + typescript-eslint recommended, plus the
// architecture rules: the layers (atrium/layers), transport-free core and
// domains, and process.env read in src/config.ts alone.
import path from 'node:path';
import { defineConfig, globalIgnores } from 'eslint/config';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const ROOT = import.meta.dirname;

/** The composition: the files that wire every layer together (they may import anything). */
const COMPOSITION = new Set(['src/app.ts', 'src/main.ts', 'src/cli.ts', 'src/boot.ts', 'src/config.ts', 'src/schema-cli.ts']);

/**
 * The layer of a repository file:
 * - kernel: src/ outside domains, host and the composition; imports no layer above it;
 * - domain: src/domains/<name>/; another domain only through its index.ts;
 * - domain-list: src/domains/index.ts, the one list of domains;
 * - graphql: subgraphs/ (the schema, its resolvers, the policy layer);
 * - host: src/host/ (the fastify plugins);
 * - rest: rest-compat/ (the REST adapter);
 * - composition: the wiring files above.
 * Tests and the bench are not layered.
 */
function layerOf(file) {
  const rel = path.relative(ROOT, file).split(path.sep).join('/').replace(/\.(ts|js|mjs)$/, '');
  if (COMPOSITION.has(`${rel}.ts`)) return { layer: 'composition', rel };
  if (rel === 'src/domains/index' || rel === 'src/domains') return { layer: 'domain-list', rel };
  const domain = /^src\/domains\/([^/]+)(\/.*)?$/.exec(rel);
  if (domain) return { layer: 'domain', domain: domain[1], index: !domain[2] || domain[2] === '/index', rel };
  if (rel.startsWith('src/host/')) return { layer: 'host', rel };
  if (rel.startsWith('src/')) return { layer: 'kernel', rel };
  if (rel.startsWith('subgraphs/')) return { layer: 'graphql', rel };
  if (rel.startsWith('rest-compat/')) return { layer: 'rest', rel };
  return null;
}

/** What each layer may import besides the kernel (and a domain its own folder). */
const ALLOWED = {
  kernel: new Set(['kernel']),
  domain: new Set(['kernel', 'domain-index']),
  'domain-list': new Set(['kernel', 'domain-index']),
  graphql: new Set(['kernel', 'domain-index', 'domain-list', 'graphql']),
  host: new Set(['kernel', 'domain-index', 'domain-list', 'graphql', 'host']),
  rest: new Set(['kernel', 'domain-index', 'domain-list', 'graphql', 'host', 'rest']),
};

const layersRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Imports follow the layers: kernel < domains < GraphQL < host < REST < composition' },
    schema: [],
  },
  create(context) {
    const from = layerOf(context.filename);
    if (!from || from.layer === 'composition') return {};
    const check = (node, source) => {
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const to = layerOf(path.resolve(path.dirname(context.filename), source));
      if (!to) return;
      let kind = to.layer;
      if (kind === 'domain') {
        // A domain's own files are its own business.
        if (from.layer === 'domain' && from.domain === to.domain) return;
        kind = to.index ? 'domain-index' : 'domain-internals';
      }
      if (ALLOWED[from.layer].has(kind)) return;
      const why =
        kind === 'domain-internals'
          ? `another domain is used only through its index.ts (src/domains/${to.domain}), not ${to.rel}`
          : `${from.layer} code may not import ${kind === 'domain-index' ? 'a domain' : kind} code (${to.rel})`;
      context.report({ node, message: `${from.rel}: ${why}` });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.value),
    };
  },
};

const TRANSPORT_MESSAGE = 'src/ is the transport-free core; only src/host may import transports';

/** Transport packages (and their subpaths) the kernel and the domains must not import. */
const transportPatterns = [
  { regex: '^(fastify|fastify-plugin|mercurius|graphql|type-graphql)(/.*)?$', message: TRANSPORT_MESSAGE },
  { regex: '^@fastify/', message: TRANSPORT_MESSAGE },
  { regex: '^graphql-', message: TRANSPORT_MESSAGE },
  { regex: '^@graphql-tools/', message: TRANSPORT_MESSAGE },
  { regex: '^@apollo/', message: TRANSPORT_MESSAGE },
  // The GraphQL and REST layers sit on top of the core, never under it.
  { regex: '^(\\.\\./)+(subgraphs|rest-compat)(/|$)', message: TRANSPORT_MESSAGE },
];

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', 'schema/', 'data/', 'coverage/']),
  {
    files: ['{src,subgraphs,rest-compat,test,bench}/**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module' },
    plugins: { atrium: { rules: { layers: layersRule } } },
    rules: {
      'atrium/layers': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // Domains add their error codes and events to the kernel's interfaces by declaration merging.
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
    },
  },
  {
    // Settings come from src/config.ts, the one reader of the environment.
    files: ['{src,subgraphs,rest-compat}/**/*.ts'],
    ignores: ['src/config.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read settings through src/config.ts (loadConfig); only it reads process.env' },
      ],
    },
  },
  {
    // The kernel and the domains: no transports.
    files: ['src/**/*.ts'],
    ignores: ['src/host/**', ...COMPOSITION],
    rules: {
      'no-restricted-imports': ['error', { patterns: transportPatterns }],
    },
  },
  {
    // The browser scripts of Atrium's own pages (plain ES modules, no build step).
    files: ['src/host/web/assets/*.js'],
    extends: [js.configs.recommended],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: Object.fromEntries(
        ['window', 'document', 'location', 'history', 'sessionStorage', 'fetch', 'CSS', 'URLSearchParams', 'URL', 'setTimeout', 'React', 'ReactDOM', 'GraphiQL'].map(
          (name) => [name, 'readonly'],
        ),
      ),
    },
  },
  {
    // The config file itself (Node ESM).
    files: ['eslint.config.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'module', globals: { process: 'readonly', console: 'readonly' } },
  },
);

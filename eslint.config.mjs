// ESLint 9 flat config: @eslint/js + typescript-eslint recommended, plus the
// architecture rule that keeps src/ (the core) free of transports.
import { defineConfig, globalIgnores } from 'eslint/config';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const TRANSPORT_MESSAGE = 'src/ is the transport-free core; only src/host may import transports';

/** Transport packages (and their subpaths) the core must not import. */
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
    rules: {
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
    // The core. src/host/** is the fastify host; app.ts, main.ts and cli.ts are
    // composition roots that wire the core to its transports.
    files: ['src/**/*.ts'],
    ignores: ['src/host/**', 'src/app.ts', 'src/main.ts', 'src/cli.ts', 'src/schema-cli.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: transportPatterns }],
    },
  },
  {
    // The config file itself (Node ESM).
    files: ['eslint.config.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'module', globals: { process: 'readonly', console: 'readonly' } },
  },
);

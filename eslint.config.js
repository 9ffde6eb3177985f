// Lint rules for the whole repository: the recommended sets, plus the type-aware checks that catch real
// defects (a promise nobody awaits or handles, an await on a value that is not a promise). Layout is
// Prettier's job (.prettierrc.json), import direction is test/unit/layers.test.ts's.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'api/generated/',
      'controllers/generated/',
      'bench/results/',
      '.bench/',
      '.agentplane/',
      'test-artifacts/',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      // Each file is checked with the tsconfig.json nearest to it (the root one, or console/tsconfig.json).
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // A promise-returning callback where void is expected is how Koa middleware and event handlers are
      // written here; the checks of conditions and spreads stay on.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // A `let` declared before the closure that reads it, and assigned once after, is intended.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Tests and benchmarks read API answers that test/support/client.ts checks against the OpenAPI document
    // at run time; an `any` there is not a boundary of the product.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', URL: 'readonly' } },
  },
);

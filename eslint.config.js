// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // TypeScript checks names (checkJs covers the .js files); eslint's own check knows no Node globals.
      'no-undef': 'off',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(fs|path|child_process|crypto|events|stream|util|os|net|http|readline|timers)$',
              message: 'use the node: prefix',
            },
          ],
        },
      ],
    },
  },
  {
    // stdout is the MCP channel in stdio mode: nothing in src/ may print to it.
    files: ['src/**/*.ts'],
    rules: {
      'no-console': 'error',
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'stdout',
          message: 'stdout is the protocol channel; use the transport or the logger',
        },
      ],
    },
  },
);

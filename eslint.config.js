// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const NODE_PREFIX = {
  regex: '^(fs|path|child_process|crypto|events|stream|util|os|net|http|readline|timers)$',
  message: 'use the node: prefix',
};

/**
 * The layers of src/, lowest first: a file may import its own layer and the ones below, never one above,
 * and nothing in a layer imports the files at the top of src/ (cli.ts, the fronts, composition.ts), which
 * compose them.
 */
const LAYERS = [
  ['protocol', 'config'],
  ['tasks'],
  ['observability', 'security', 'telemetry', 'transport'],
  ['session'],
  ['modern'],
];

/** `no-restricted-imports` for the files of one layer, `depth` directories below src/. */
function layerRule(dirs, above, depth) {
  const up = '\\.\\./'.repeat(depth);
  const patterns = [
    NODE_PREFIX,
    {
      regex: `^${up}[^./][^/]*\\.js$`,
      message: 'the files at the top of src/ compose the layers: nothing below imports them',
    },
  ];
  if (above.length > 0) {
    patterns.push({
      regex: `^(\\.\\./)+(${above.join('|')})/`,
      message: `src/ is layered (LAYERS in eslint.config.js): ${dirs.join(', ')} may not import ${above.join(', ')}`,
    });
  }
  return {
    files: dirs.map((dir) => `src/${dir}/${'*/'.repeat(depth - 1)}*.ts`),
    rules: { 'no-restricted-imports': ['error', { patterns }] },
  };
}

/** Folders that compose the layers as the files at the top of src/ do (and may import those files). */
const COMPOSERS = ['aggregate'];

const layerRules = LAYERS.flatMap((dirs, level) => {
  const above = [...LAYERS.slice(level + 1).flat(), ...COMPOSERS];
  return [layerRule(dirs, above, 1), layerRule(dirs, above, 2)];
});

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
      'no-restricted-imports': ['error', { patterns: [NODE_PREFIX] }],
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
  ...layerRules,
);

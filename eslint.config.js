// Lint: TypeScript rules plus the import direction of STYLE.md, checked on every CI run.
import tseslint from 'typescript-eslint';

/** Folders holding adapters: they may import ports and shared helpers, never each other. */
const ADAPTER_DIRS = ['model', 'browser', 'recorder', 'storage', 'control-plane', 'toolset'];

// runner/ and agent/ know ports (each folder's types.ts) and domain code, never adapters.
const coreRestrictions = ADAPTER_DIRS.map((dir) => ({
  group: [`../${dir}/*`, `!../${dir}/types.js`],
  message: `runner/ and agent/ may import only ${dir}/types.js (the port); adapters are wired in main.ts.`,
}));

const adapterRule = (self) => ({
  files: [`src/${self}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          ...ADAPTER_DIRS.filter((d) => d !== self).map((dir) => ({
            group: [`../${dir}/*`, `../../${dir}/*`, `!../${dir}/types.js`, `!../../${dir}/types.js`],
            message: 'adapters never import each other: only ports (types.js).',
          })),
          { group: ['../runner/*', '../agent/*', '../intake/*', '../../runner/*', '../../agent/*', '../../intake/*'], message: 'adapters do not depend on the core.' },
        ],
      },
    ],
  },
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.test-output/**', 'artifacts/**', 'src/control-plane/local-server/dashboard/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['src/runner/**/*.ts', 'src/agent/**/*.ts', 'src/domain/**/*.ts', 'src/intake/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...coreRestrictions,
            { group: ['playwright-core', 'playwright', '@anthropic-ai/sdk', '@aws-sdk/*', 'fluent-ffmpeg'], message: 'vendor SDKs stay inside their adapter.' },
          ],
        },
      ],
    },
  },
  ...ADAPTER_DIRS.map(adapterRule),
);

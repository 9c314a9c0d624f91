// Lint: TypeScript rules plus the import direction of docs/architecture.md, checked on every CI run.
import tseslint from 'typescript-eslint';
import { noImportCycle } from './scripts/lint/no-import-cycle.js';

/** Folders holding adapters: they may import ports and shared helpers, never each other. */
const ADAPTER_DIRS = ['model', 'browser', 'recorder', 'storage', 'control-plane', 'toolset', 'live', 'human', 'tracing'];

/**
 * OpenTelemetry is loaded only where tracing is configured (src/tracing/start.ts imports it on
 * demand): every other file knows the tracing port alone (telemetry/types.ts).
 */
const onlyTheTracingAdapter = {
  group: ['@opentelemetry/*', '@grpc/*'],
  message: 'OpenTelemetry stays inside src/tracing/ (loaded only when tracing is configured); use the tracing port (telemetry/types.js).',
};

// runner/, run-cache/ and agent/ know ports (each folder's types.ts) and domain code, never adapters.
const coreRestrictions = ADAPTER_DIRS.map((dir) => ({
  group: [`../${dir}/*`, `!../${dir}/types.js`],
  message: `runner/, run-cache/ and agent/ may import only ${dir}/types.js (the port); adapters are wired in main.ts.`,
}));

/**
 * Two programs share src/domain and the telemetry ports: the worker and the local service (API,
 * dashboard, their store). Neither imports the other; only cli.ts starts both.
 */
const notTheLocalService = {
  group: ['../local-service/*', '../../local-service/*'],
  message: 'the worker does not import the local service (a program of its own; only cli.ts starts it).',
};
const WORKER_DIRS = [...ADAPTER_DIRS, 'runner', 'run-cache', 'agent', 'intake', 'config'];
const WORKER_FILES = ['compose', 'daemon', 'main', 'cli'];

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
          { group: ['../runner/*', '../run-cache/*', '../agent/*', '../intake/*', '../../runner/*', '../../run-cache/*', '../../agent/*', '../../intake/*'], message: 'adapters do not depend on the core.' },
          notTheLocalService,
          ...(self === 'tracing' ? [] : [onlyTheTracingAdapter]),
        ],
      },
    ],
  },
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.test-output/**', 'artifacts/**', 'src/local-service/dashboard/**', 'src/browser/page-scripts.generated.ts'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['src/config/**/*.ts', 'src/telemetry/**/*.ts', 'src/compose.ts', 'src/daemon.ts', 'src/main.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [notTheLocalService, onlyTheTracingAdapter] }] },
  },
  {
    // The CLI starts both programs: it may import the local service, never OpenTelemetry.
    files: ['src/cli.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [onlyTheTracingAdapter] }] },
  },
  {
    // telemetry/ is the floor of the worker's folders: every folder logs and emits, so it imports
    // none of them (the event map is the execution's, execution/events.ts). It stands on the
    // ground (a logs.jsonl line is contract/log-line.ts), and the process log scrubs secrets in
    // every form the vault knows them, by the vault's own code, itself pure (domain/ imports
    // nothing above it).
    files: ['src/telemetry/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [{ regex: '^\\.\\./(?!domain/secrets\\.js$|contract/[a-z-]+\\.js$)', message: 'telemetry/ sits below every other folder: it imports none of them (only contract/ and domain/secrets.js, for the process log).' }, onlyTheTracingAdapter],
        },
      ],
    },
  },
  {
    // No module reaches itself through its imports, the page scripts included.
    files: ['src/**/*.ts'],
    plugins: { local: { rules: { 'no-import-cycle': noImportCycle } } },
    rules: { 'local/no-import-cycle': 'error' },
  },
  {
    files: ['src/runner/**/*.ts', 'src/run-cache/**/*.ts', 'src/agent/**/*.ts', 'src/domain/**/*.ts', 'src/intake/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...coreRestrictions,
            { group: ['playwright-core', 'playwright', '@anthropic-ai/sdk', '@aws-sdk/*', 'fluent-ffmpeg', '@opentelemetry/*', '@grpc/*'], message: 'vendor SDKs stay inside their adapter.' },
            notTheLocalService,
          ],
        },
      ],
    },
  },
  {
    // execution/ is an execution's vocabulary (its events, outcome, counters, a person's wait):
    // the runner, the run cache and the agent all speak it, so it sits below them. It states its
    // shapes with the contract's, types the stream of telemetry/event-stream.ts, and names the
    // points, downloads and traces of the browser's and the toolset's ports; nothing else.
    files: ['src/execution/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\./[a-z-]+\\.js$|\\.\\./contract/[a-z-]+\\.js$|\\.\\./telemetry/event-stream\\.js$|\\.\\./browser/types\\.js$|\\.\\./toolset/types\\.js$)',
              message: 'execution/ sits below the runner, the run cache and the agent: it imports contract/, telemetry/event-stream.js and the ports browser/types.js and toolset/types.js only.',
            },
          ],
        },
      ],
    },
  },
  {
    // The order of the core: runner → run-cache → agent → execution. Nothing lower imports a
    // higher floor.
    files: ['src/agent/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...coreRestrictions,
            { group: ['playwright-core', 'playwright', '@anthropic-ai/sdk', '@aws-sdk/*', 'fluent-ffmpeg', '@opentelemetry/*', '@grpc/*'], message: 'vendor SDKs stay inside their adapter.' },
            notTheLocalService,
            { group: ['../runner/*', '../run-cache/*'], message: 'the agent sits below the runner and the run cache: it imports neither (their shared words are in execution/).' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/run-cache/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...coreRestrictions,
            { group: ['playwright-core', 'playwright', '@anthropic-ai/sdk', '@aws-sdk/*', 'fluent-ffmpeg', '@opentelemetry/*', '@grpc/*'], message: 'vendor SDKs stay inside their adapter.' },
            notTheLocalService,
            { group: ['../runner/*'], message: 'the run cache sits below the runner: it does not import it (their shared words are in execution/).' },
          ],
        },
      ],
    },
  },
  {
    // domain/ is pure and low: it imports the contract and itself, never a folder above it.
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...coreRestrictions,
            { group: ['playwright-core', 'playwright', '@anthropic-ai/sdk', '@aws-sdk/*', 'fluent-ffmpeg', '@opentelemetry/*', '@grpc/*'], message: 'vendor SDKs stay inside their adapter.' },
            notTheLocalService,
            { regex: '^\\.\\./(?!contract/)', message: 'domain/ imports the contract and its own files only.' },
          ],
        },
      ],
    },
  },
  ...ADAPTER_DIRS.map(adapterRule),
  {
    // The wire shapes (docs/architecture.md#wire-shapes): both programs, the worker and the local
    // service, read them, so they are the ground: they import zod and each other, nothing above.
    // The allow-list parser, the contract's own (every entry is checked by it), also reads a
    // host's public suffix (tldts) and an IP address (node:net).
    files: ['src/contract/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!zod$|\\./[a-z-]+\\.js$)', message: 'src/contract/ is the ground: it imports zod and its own files only.' }] },
      ],
    },
  },
  {
    files: ['src/contract/allow-list.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!zod$|tldts$|node:net$|\\./[a-z-]+\\.js$)', message: 'the allow-list parser imports tldts, node:net and its own folder only.' }] },
      ],
    },
  },
  {
    // The page scripts run in the browser, bundled on their own (scripts/build-page-scripts.ts):
    // they import one another and nothing else (no package, no Node module, no worker code).
    files: ['src/browser/page/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^(?!\\./)', message: 'page scripts import only each other (./x.js): they run in the page, not in Node.' }] }],
    },
  },
  {
    files: ['src/local-service/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [...WORKER_DIRS.map((dir) => `../${dir}/*`), ...WORKER_FILES.map((f) => `../${f}.js`), '../telemetry/*', '!../telemetry/types.js', '!../telemetry/tracing.js'],
              message: 'the local service is a program of its own: from the worker it shares src/domain and the telemetry ports, nothing else.',
            },
            onlyTheTracingAdapter,
          ],
        },
      ],
    },
  },
);

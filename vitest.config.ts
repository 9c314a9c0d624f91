import { defineConfig } from 'vitest/config';

/**
 * Three groups, run one after the other. Most files run two at a time. The real-application
 * tests (Redmine, DokuWiki: a whole application server beside Chromium) run next, one file at
 * a time, so an application's boot is never starved by another browser test; any file put in
 * their folder joins them. The load test starts three worker processes (three browsers, nine
 * executions at once): it runs last and alone, because next to it any other browser test is
 * starved of CPU on a 2-core machine.
 */
const REAL_APPS = ['test/integration/real-apps/**/*.test.ts'];
const ALONE = ['test/faults/load.test.ts'];

export default defineConfig({
  test: {
    // Integration tests start Chromium, ffmpeg and Redis: give them room on a 2-core machine.
    testTimeout: 90_000,
    hookTimeout: 90_000,
    pool: 'forks',
    globalSetup: ['test/support/page-scripts-setup.ts', 'test/support/global-setup.ts'],
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.test-output/results.json' }]] : ['default'],
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: [...REAL_APPS, ...ALONE], maxWorkers: 2, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'real-apps', include: REAL_APPS, maxWorkers: 1, sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 2 } } },
    ],
  },
});

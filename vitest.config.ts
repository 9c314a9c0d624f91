import { defineConfig } from 'vitest/config';

/**
 * Two groups, run one after the other. Most files run two at a time. The load test starts
 * three worker processes (three browsers, nine executions at once): it runs last and alone,
 * because next to it any other browser test is starved of CPU on a 2-core machine.
 */
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
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: ALONE, maxWorkers: 2, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});

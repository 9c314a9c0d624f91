import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration tests start Chromium, ffmpeg and Redis: give them room on a 2-core machine.
    testTimeout: 90_000,
    hookTimeout: 90_000,
    pool: 'forks',
    maxWorkers: 2,
    globalSetup: ['test/support/global-setup.ts'],
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.test-output/results.json' }]] : ['default'],
  },
});

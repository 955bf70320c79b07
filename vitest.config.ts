import { defineConfig } from 'vitest/config';

// The file suite runs a second time on the S3 driver, against s3rver on loopback
// (test/modules/file/driver.ts); every other test runs once.
const FILE_SUITE = 'test/modules/file/**/*.test.ts';

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    projects: [
      {
        test: {
          name: 'tenantry',
          include: ['test/**/*.test.ts'],
          typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
        },
      },
      {
        test: {
          name: 'files on s3',
          include: [FILE_SUITE],
          env: { TEST_FILE_DRIVER: 's3' },
        },
      },
    ],
  },
});

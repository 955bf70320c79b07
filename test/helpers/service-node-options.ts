import { expect } from 'vitest';
import { startNodeOptions } from '../../scripts/start-options.ts';

/**
 * A memory test measures the service as operators run it: its process must carry the Node options
 * of `npm run start:web` (vitest.config.ts gives them to the memory projects as `execArgv`). Fails
 * when the project lost them, so a figure taken under V8's own young generation is never reported
 * as the service's.
 */
export function expectServiceNodeOptions(): void {
  const options = startNodeOptions('start:web');
  expect(options.length, "package.json's start:web script gives Node no option").toBeGreaterThan(0);
  expect(process.execArgv, 'this process runs without the options of `npm run start:web`').toEqual(
    expect.arrayContaining(options),
  );
}

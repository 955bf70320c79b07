import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.ts';
import { startService, stopService } from './processes.ts';

describe('mail without mail.host', () => {
  it('goes to an in-memory mailbox, and the service warns about it at startup', async () => {
    const service = await startService({
      TENANTRY_DATABASE_URL: await createTestDatabase(),
      TENANTRY_SERVER_PORT: '0',
      TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
      TENANTRY_SERVER_LOG_LEVEL: 'info',
    });
    try {
      const entries = service
        .log()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string; mail?: string });
      const warning = entries.find((e) => e.msg.includes('mail.host is not set'));
      expect(warning?.level).toBe(40);
      expect(entries.find((e) => e.msg === 'tenantry started')?.mail).toBe('in-memory mailbox');
    } finally {
      await stopService(service.child);
    }
  }, 120_000);
});

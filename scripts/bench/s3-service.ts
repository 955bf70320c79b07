import { SETTINGS_ENV } from './protocol.ts';
import { serveScenario } from './scenario-service.ts';
import type { S3UploadSettings } from './s3-upload.ts';

/**
 * The service under the s3 upload scenario, in its own process: role web on files.storage s3 (the
 * run's s3rver), one tenant and a signed-in file manager. Answers the run over IPC like service.ts.
 */
const settings = JSON.parse(process.env[SETTINGS_ENV] ?? '{}') as S3UploadSettings;

void serveScenario({
  name: `s3-bench-${settings.runId}`,
  role: 'web',
  permissions: ['file:read', 'file:manage'],
  settings: {
    server: { host: '127.0.0.1', port: 0, public_host: 'localhost', log_level: 'warn' },
    database: { url: settings.databaseUrl },
    files: { storage: 's3', s3: settings.s3, max_bytes: settings.maxUploadBytes, quota_bytes: Number.MAX_SAFE_INTEGER },
  },
});

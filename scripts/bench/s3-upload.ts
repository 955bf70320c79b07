import { rmSync } from 'node:fs';
import { startServer, type ServerProcess } from './child.ts';
import { measureUpload, type UploadFigures } from './upload.ts';
import type { BenchOptions } from './options.ts';
import type { ResultRow } from './report.ts';
import type { S3Settings } from '../../framework/storage/s3.ts';
import { startS3Server } from '../../test/helpers/s3.ts';

/** What the s3 upload scenario's two server processes are given. */
export interface S3UploadSettings {
  databaseUrl: string;
  runId: string;
  s3: S3Settings;
  maxUploadBytes: number;
}

/**
 * `--only upload-s3`: one upload of `--upload-mib` MiB through the service on files.storage s3
 * (s3-service.ts: multipart, tenant, session, quota, SHA-256, row, event) beside the same bytes
 * through a bare lib-storage Upload (s3-baseline.ts), both into one s3rver (in a process of its
 * own), alternating, in the same run. Reported: the best MB/s of each side, their ratio (target
 * ≥ 0.8) and the service's RSS growth during one upload (target < 64 MiB for 1024 MiB).
 */
export async function measureS3UploadGroup(
  options: BenchOptions,
  databaseUrl: string,
  runId: string,
  log: (line: string) => void,
  load: () => string,
): Promise<ResultRow[]> {
  const bucket = await startS3Server({ bucket: 'tenantry-bench' });
  const servers: ServerProcess[] = [];
  try {
    const settings: S3UploadSettings = {
      databaseUrl,
      runId,
      s3: bucket.settings('bench/'),
      maxUploadBytes: options.uploadMib * 1024 * 1024,
    };
    const service = await startServer('service-s3', './s3-service.ts', settings);
    servers.push(service);
    const baseline = await startServer('baseline-s3', './s3-baseline.ts', settings);
    servers.push(baseline);
    const { host, cookie } = service.ready as unknown as { host: string; cookie: string };
    log(
      `upload-s3: ${options.uploadMib} MiB per upload into s3rver on port ${bucket.port}, ${options.rounds} round(s) each side, alternating (load average ${load()})`,
    );
    const service_: UploadFigures[] = [];
    const baseline_: UploadFigures[] = [];
    for (let round = 0; round < options.rounds; round++) {
      service_.push(
        await measureUpload(
          service.port,
          '/api/v1/file/files?visibility=private',
          { host, cookie },
          options.uploadMib,
          service.pid,
        ),
      );
      baseline_.push(
        await measureUpload(baseline.port, '/upload', { host: 'baseline' }, options.uploadMib, baseline.pid),
      );
      log(
        `  round ${round + 1}: service ${service_.at(-1)!.mbPerSecond.toFixed(0)} MB/s, bare lib-storage ${baseline_.at(-1)!.mbPerSecond.toFixed(0)} MB/s`,
      );
    }
    const best = (figures: UploadFigures[]) => Math.max(...figures.map((f) => f.mbPerSecond));
    const growthMib = (figures: UploadFigures[]) => {
      const growths = figures.map((f) => f.rssGrowth).filter((g): g is number => g !== null);
      return growths.length > 0 ? Math.max(...growths) / (1024 * 1024) : undefined;
    };
    const ratio = best(service_) / best(baseline_);
    const serviceGrowth = growthMib(service_);
    const baselineGrowth = growthMib(baseline_);
    log(
      `  RSS growth during one upload: service ${serviceGrowth?.toFixed(1) ?? 'unknown'} MiB, bare lib-storage ${baselineGrowth?.toFixed(1) ?? 'unknown'} MiB`,
    );
    return [
      {
        name: `upload-s3-${options.uploadMib}MiB`,
        rps: null,
        p50_ms: null,
        p99_ms: null,
        ratio_to_baseline: ratio,
        mb_per_s: best(service_),
        ...(serviceGrowth !== undefined ? { rss_growth_mib: serviceGrowth } : {}),
        target: `≥ 0.8× bare lib-storage MB/s, RSS growth < 64 MiB${options.uploadMib === 1024 ? '' : ' (target set for 1024 MiB)'}`,
        met: ratio >= 0.8 && serviceGrowth !== undefined && serviceGrowth < 64,
      },
      {
        name: 'upload-s3-baseline',
        rps: null,
        p50_ms: null,
        p99_ms: null,
        ratio_to_baseline: 1,
        mb_per_s: best(baseline_),
        ...(baselineGrowth !== undefined ? { rss_growth_mib: baselineGrowth } : {}),
      },
    ];
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await bucket.close();
    rmSync(bucket.directory, { recursive: true, force: true });
  }
}

import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../framework/config/load.ts';

/** files.storage and files.s3.*: the keys as named, their environment overrides and their rules. */
describe('Configuration: files.storage and files.s3', () => {
  it('defaults to the local disk, with every files.s3 key empty', () => {
    const config = validateConfig({}, 'config.yaml');
    expect(config.files.storage).toBe('local');
    expect(config.files.s3).toEqual({ bucket: '', region: '', endpoint: '', force_path_style: false, prefix: '' });
  });

  it('takes every key from TENANTRY_FILES_* variables, force_path_style as a boolean', () => {
    const config = validateConfig({}, 'config.yaml', {
      TENANTRY_FILES_STORAGE: 's3',
      TENANTRY_FILES_S3_BUCKET: 'uploads',
      TENANTRY_FILES_S3_REGION: 'eu-central-1',
      TENANTRY_FILES_S3_ENDPOINT: 'http://minio.internal:9000',
      TENANTRY_FILES_S3_FORCE_PATH_STYLE: 'true',
      TENANTRY_FILES_S3_PREFIX: 'tenantry/',
    });
    expect(config.files.storage).toBe('s3');
    expect(config.files.s3).toEqual({
      bucket: 'uploads',
      region: 'eu-central-1',
      endpoint: 'http://minio.internal:9000',
      force_path_style: true,
      prefix: 'tenantry/',
    });
  });

  it('refuses s3 without a bucket, an endpoint that is not an http(s) URL, a prefix starting with /, another driver and credential keys', () => {
    const refused = (files: Record<string, unknown>) => () => validateConfig({ files }, 'config.yaml');
    expect(refused({ storage: 's3' })).toThrow('config.yaml: files.s3.bucket must be set when files.storage is s3');
    expect(refused({ storage: 's3', s3: { bucket: 'b', endpoint: 'minio:9000' } })).toThrow(
      'files.s3.endpoint must be empty (AWS) or an http(s) URL',
    );
    expect(refused({ s3: { prefix: '/tenantry/' } })).toThrow('files.s3.prefix must not start with /');
    expect(refused({ storage: 'gcs' })).toThrow('files.storage must be one of local, s3');
    expect(refused({ s3: { access_key_id: 'AKIA...' } })).toThrow('files.s3.access_key_id is not a known key');
  });
});

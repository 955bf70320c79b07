import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import multipart from '@fastify/multipart';
import { DeleteObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { SETTINGS_ENV, type ChildMessage, type ChildRequest } from './protocol.ts';
import type { S3UploadSettings } from './s3-upload.ts';

/**
 * The s3 upload scenario's baseline: a bare fastify + @fastify/multipart server that hands the
 * file part to lib-storage's Upload, with the SDK's own part size and queue (5 MiB, 4), into the
 * same bucket of the same s3rver, then removes the object. No tenant, session, quota, hashing or
 * row: what the service's figure is read against.
 */
const settings = JSON.parse(process.env[SETTINGS_ENV] ?? '{}') as S3UploadSettings;
const send = (message: ChildMessage) => process.send?.(message);

async function main(): Promise<void> {
  const client = new S3Client({
    region: settings.s3.region,
    endpoint: settings.s3.endpoint,
    forcePathStyle: settings.s3.force_path_style,
  });
  const app = Fastify({ logger: false, bodyLimit: Number.MAX_SAFE_INTEGER });
  await app.register(multipart, { limits: { fileSize: Number.POSITIVE_INFINITY } });
  app.post('/upload', async (request, reply) => {
    const part = await request.file();
    if (!part) throw new Error('no file part');
    const Key = `baseline/${randomUUID()}`;
    await new Upload({ client, params: { Bucket: settings.s3.bucket, Key, Body: part.file } }).done();
    await client.send(new DeleteObjectCommand({ Bucket: settings.s3.bucket, Key }));
    reply.code(201);
    return { ok: true };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('the baseline has no address');
  process.on('message', (message: ChildRequest) => {
    if (message.type === 'stop') void app.close().finally(() => process.exit(0));
  });
  send({ type: 'ready', port: address.port });
}

main().catch((err: Error) => {
  send({ type: 'failed', error: err.stack ?? err.message });
  process.exit(1);
});

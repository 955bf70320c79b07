import S3rver from 's3rver';

/**
 * An S3-compatible server (s3rver) in a process of its own, for the tests and the bench: started
 * by test/helpers/s3.ts, which passes the directory, port and bucket in the environment and
 * waits for the port over IPC. Run with --openssl-legacy-provider: s3rver encrypts ListObjectsV2
 * continuation tokens with DES, which Node's OpenSSL 3 offers only through its legacy provider.
 */
const directory = process.env.S3RVER_DIRECTORY!;
const port = Number(process.env.S3RVER_PORT ?? 0);
const bucket = process.env.S3RVER_BUCKET!;

const server = new S3rver({
  address: '127.0.0.1',
  port,
  directory,
  silent: true,
  configureBuckets: [{ name: bucket }],
});
const address = (await server.run()) as { port: number };
process.send?.({ type: 'ready', port: address.port });
const stop = () => {
  server.close().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('disconnect', stop);

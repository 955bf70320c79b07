import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../framework/config/load.ts';
import { startFailureLine } from '../../framework/start-failure.ts';

/** The error a connection to a closed port of a name resolving to ::1 and 127.0.0.1 fails with. */
function refusedOnBothAddresses(): Promise<Error & { code?: unknown }> {
  return new Promise((resolve) => {
    const socket = connect({
      host: 'dual-stack.localhost',
      port: 1,
      // What the resolver answers for localhost on most systems (/etc/hosts lists both).
      lookup: (_host, _options, callback) =>
        (callback as (err: null, addresses: { address: string; family: number }[]) => void)(null, [
          { address: '127.0.0.1', family: 4 },
          { address: '::1', family: 6 },
        ]),
    });
    socket.on('error', resolve);
  });
}

describe('the line a failed start prints', () => {
  it('a database refusing on every address of its name: the reasons, not an empty line', async () => {
    const err = await refusedOnBothAddresses();
    // Node's own error: an AggregateError with code ECONNREFUSED and no message of its own.
    expect(err).toBeInstanceOf(AggregateError);
    expect(err.message).toBe('');
    expect(startFailureLine(err)).toBe('tenantry: connect ECONNREFUSED 127.0.0.1:1; connect ECONNREFUSED ::1:1');
  });

  it('a refusal of ours or an error with a code: its message; anything else: its stack', () => {
    expect(startFailureLine(new ConfigError('config.yaml: server.port must be an integer'))).toBe(
      'tenantry: config.yaml: server.port must be an integer',
    );
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(startFailureLine(refused)).toBe('tenantry: connect ECONNREFUSED 127.0.0.1:1');
    const defect = new TypeError('x is not a function');
    expect(startFailureLine(defect)).toBe(`tenantry: ${defect.stack}`);
  });
});

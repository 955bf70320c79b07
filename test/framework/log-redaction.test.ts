import { describe, expect, it } from 'vitest';
import { loggableUrl } from '../../framework/http/log-redaction.ts';

describe('request URLs in logs', () => {
  it('keeps paths and ordinary parameters, and hides secret parameter values', () => {
    expect(loggableUrl('/api/v1/testkit/widgets?limit=5&sort=-name')).toBe(
      '/api/v1/testkit/widgets?limit=5&sort=-name',
    );
    expect(loggableUrl('/auth/reset?token=s3cr3t')).toBe('/auth/reset?token=redacted');
    expect(loggableUrl('/api/v1/auth/oidc/callback?code=abc&state=def&iss=x')).toBe(
      '/api/v1/auth/oidc/callback?code=redacted&state=redacted&iss=x',
    );
    expect(loggableUrl('/x?Token=a&token=b')).not.toMatch(/=a|=b/);
  });

  it("hides an export link's signature, which opens the archive without a session", () => {
    expect(loggableUrl('/api/v1/tenant/exports/0193/archive?expires=1767225600&signature=c2VjcmV0')).toBe(
      '/api/v1/tenant/exports/0193/archive?expires=1767225600&signature=redacted',
    );
    expect(loggableUrl('/x?SIGNATURE=a&sig=b')).not.toMatch(/=a|=b/);
  });
});

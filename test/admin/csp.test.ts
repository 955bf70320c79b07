import { describe, expect, it } from 'vitest';
import { adminContentSecurityPolicy } from '../../framework/admin/csp.ts';

/** The admin shell's policy names the asset folder on the host asked, and only a host CSP can name. */
const policy = (host: string | undefined) =>
  adminContentSecurityPolicy({ headers: host === undefined ? {} : { host } });
const directive = (csp: string, name: string) => csp.split('; ').find((d) => d.startsWith(`${name} `));

describe('the admin shell’s Content-Security-Policy', () => {
  it('names the shell’s asset folder on the request’s host (and port), for scripts and style sheets; never the whole origin', () => {
    for (const [host, source] of [
      ['acme.localhost:3000', 'acme.localhost:3000/admin/_assets/'],
      ['Acme.Example.com', 'acme.example.com/admin/_assets/'],
      ['127.0.0.1:8080', '127.0.0.1:8080/admin/_assets/'],
    ] as const) {
      const csp = policy(host);
      expect(directive(csp, 'script-src'), host).toBe(`script-src ${source}`);
      expect(directive(csp, 'style-src'), host).toBe(`style-src ${source} 'unsafe-inline'`);
      expect(csp, host).toContain("frame-ancestors 'none'");
      expect(csp, host).toContain("object-src 'none'");
      expect(csp, host).toContain("base-uri 'none'");
    }
  });

  it('copies no Host header that is not a plain host into the policy: no script source then', () => {
    for (const host of ['evil.example; script-src *', 'a b', '[::1]:3000', 'acme.localhost:3000/x', '', undefined]) {
      const csp = policy(host);
      expect(directive(csp, 'script-src'), String(host)).toBe("script-src 'none'");
      expect(directive(csp, 'style-src'), String(host)).toBe("style-src 'unsafe-inline'");
      expect(
        csp.split('; ').filter((d) => d.startsWith('script-src')),
        String(host),
      ).toHaveLength(1);
    }
  });
});

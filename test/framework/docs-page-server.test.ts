import { describe, expect, it } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * Issue 41, point 8 ("The docs page"): /api/v1/docs on a customer's host read a document whose
 * server defaulted to the operator's host, so "Try it out" called the operator tenant. The served
 * document now defaults the server's host to the host it was read on; the exported one (the
 * snapshot, a generated client's) still names server.public_host.
 */
const t = useTestApp({ customers: ['docsacme'] });

type Servers = { servers: { url: string; variables: { host: { default: string } } }[] };

describe('the served document defaults its server to the host it was read on', () => {
  it('the docs page’s document on a customer’s host names that host, with the port it was asked with', async () => {
    const res = await t.app.http('docsacme.localhost:8123').get('/api/v1/docs/json');
    expect(res.status).toBe(200);
    const { servers } = res.body as Servers;
    expect(servers).toHaveLength(1);
    expect(servers[0]!.url).toBe('http://{host}');
    expect(servers[0]!.variables.host.default).toBe('docsacme.localhost:8123');
    const bare = (await t.app.http('DocsAcme.localhost').get('/api/v1/docs/json')).body as Servers;
    expect(bare.servers[0]!.variables.host.default).toBe('docsacme.localhost');
  });

  it('/api/v1/openapi.json the same; the operator’s host names the operator’s', async () => {
    const acme = (await t.app.http('docsacme.localhost').get('/api/v1/openapi.json')).body as Servers;
    expect(acme.servers[0]!.variables.host.default).toBe('docsacme.localhost');
    const operator = (await t.app.http().get('/api/v1/openapi.json')).body as Servers;
    expect(operator.servers[0]!.variables.host.default).toBe(t.app.config.server.public_host);
  });

  it('a public host is https, as behind the TLS proxy it sits behind', async () => {
    await createCustomer(t.app, 'docsshop', 'docs-shop.example.com');
    const res = await t.app.http('docs-shop.example.com').get('/api/v1/docs/json');
    expect(res.status).toBe(200);
    const { servers } = res.body as Servers;
    expect(servers[0]!.url).toBe('https://{host}');
    expect(servers[0]!.variables.host.default).toBe('docs-shop.example.com');
  });

  it('the docs page reads its document from the host it is served on', async () => {
    const page = await t.app.http('docsacme.localhost').get('/api/v1/docs/static/swagger-initializer.js');
    expect(page.status).toBe(200);
    // A relative URL: the browser asks the same host for the document.
    expect(page.text).toContain("url: resolveUrl('./json')");
  });
});

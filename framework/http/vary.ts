import type { FastifyReply } from 'fastify';

/**
 * Adds a request header's name to the answer's Vary, keeping the names already there: the CORS
 * hook says Origin before the route runs, and a route answering by Accept must not take it away
 * (reply.header replaces a header's value).
 */
export function addVary(reply: FastifyReply, name: string): void {
  const current = reply.getHeader('vary');
  if (current === undefined || current === '') {
    reply.header('vary', name);
    return;
  }
  const text = Array.isArray(current) ? current.join(', ') : String(current);
  const lower = name.toLowerCase();
  if (text.split(',').some((n) => n.trim() === '*' || n.trim().toLowerCase() === lower)) return;
  reply.header('vary', `${text}, ${name}`);
}

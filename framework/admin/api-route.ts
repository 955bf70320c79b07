import type { AnyRoute } from '../entity/define.ts';
import type { Registry } from '../entity/registry.ts';

/** The API route with this operation id: an admin page runs its handler, under its access. */
export function apiRoute(registry: Registry, operationId: string): AnyRoute | undefined {
  return registry.routes.find((r) => r.route.operationId === operationId)?.route;
}

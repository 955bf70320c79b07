import type { TSchema } from 'typebox';
import type { Config } from '../config/schema.ts';
import { moduleJobs, type ModuleDefinition } from './module-definition.ts';
import type { AnyRoute } from './route-definition.ts';
import { entityNames } from './names.ts';

/**
 * A module's own events, each written once: those its `publishes` lists name under its own name
 * (its commands', hooks', routes', subscriptions' and jobs'), the ones it gives a payload schema
 * (`eventPayloads`), and what it lists in `events` besides (an event only code outside those
 * lists publishes, or one a subscription listens for). An event of another module's name is
 * that module's to declare: naming it in a list declares nothing.
 */
export function moduleEvents(module: ModuleDefinition, config: Config): string[] {
  const routes: readonly AnyRoute[] =
    typeof module.routes === 'function' ? module.routes(config) : (module.routes ?? []);
  // Its entities' created, updated and deleted events are theirs already (names.ts).
  const lifecycle = new Set((module.entities ?? []).flatMap((entity) => Object.values(entityNames(entity).events)));
  const published = [
    ...(module.entities ?? []).flatMap((entity) => [
      ...Object.values(entity.commands ?? {}).flatMap((command) => command.publishes ?? []),
      ...(entity.hookPublishes ?? []),
    ]),
    ...routes.flatMap((route) => route.publishes ?? []),
    ...(module.subscriptions ?? []).flatMap((subscription) => subscription.publishes ?? []),
    ...moduleJobs(module, config).flatMap((job) => job.publishes ?? []),
  ].filter((event) => event.startsWith(`${module.name}.`) && !lifecycle.has(event));
  return [...new Set([...(module.events ?? []), ...Object.keys(module.eventPayloads ?? {}), ...published])];
}

/** The payload schemas the modules declare, by event. */
export function eventPayloadSchemas(modules: readonly ModuleDefinition[]): Map<string, TSchema> {
  return new Map(modules.flatMap((m) => Object.entries(m.eventPayloads ?? {})));
}

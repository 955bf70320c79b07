import Type, { type TString, type TStringOptions } from 'typebox';
import type { AnyEntity } from './entity-definition.ts';

/**
 * The vendor keyword marking a string field whose values are the service's event names. The
 * registry, once every module's events are known, replaces the mark with the schema's `enum`
 * (withEventNames): validation, the OpenAPI document, the catalog and the admin shell all read the
 * same list.
 */
export const EVENT_NAMES = 'x-event-names';

interface EventNameMark {
  /** Values accepted besides the event names, listed first (a wildcard). */
  also: readonly string[];
}

/**
 * A field (or array item) that takes an event name the modules declare, e.g. what a webhook
 * endpoint subscribes to. Its enum is filled in at boot from every module's events and every
 * entity's lifecycle events, sorted, after `also`.
 */
export function EventName(options: TStringOptions & { also?: readonly string[] } = {}): TString {
  const { also = [], ...rest } = options;
  return Type.String({ ...rest, [EVENT_NAMES]: { also: [...also] } satisfies EventNameMark });
}

const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A copy keeping every own property, TypeBox's non-enumerable kind included. */
const copyOf = (schema: Record<string, unknown>): Record<string, unknown> =>
  Object.create(Object.getPrototypeOf(schema), Object.getOwnPropertyDescriptors(schema)) as Record<string, unknown>;

/** The schema with each mark (`key`: EVENT_NAMES, FEATURE_NAMES) replaced by its enum; the same object where there is none. */
function substitute(schema: unknown, events: readonly string[], key: string = EVENT_NAMES): unknown {
  if (Array.isArray(schema)) {
    const items = schema.map((item) => substitute(item, events, key));
    return items.some((item, i) => item !== schema[i]) ? items : schema;
  }
  if (!isPlain(schema)) return schema;
  const mark = schema[key] as EventNameMark | undefined;
  if (mark) {
    const copy = copyOf(schema);
    delete copy[key];
    copy.enum = [...mark.also, ...events.filter((e) => !mark.also.includes(e))];
    return copy;
  }
  let copy: Record<string, unknown> | undefined;
  for (const part of ['items', 'properties', 'anyOf', 'oneOf', 'allOf']) {
    if (!(part in schema)) continue;
    const value = schema[part];
    const next =
      part === 'properties' && isPlain(value)
        ? substituteProperties(value, events, key)
        : substitute(value, events, key);
    if (next === value) continue;
    copy ??= copyOf(schema);
    copy[part] = next;
  }
  return copy ?? schema;
}

function substituteProperties(properties: Record<string, unknown>, events: readonly string[], key = EVENT_NAMES) {
  let copy: Record<string, unknown> | undefined;
  for (const [name, value] of Object.entries(properties)) {
    const next = substitute(value, events, key);
    if (next === value) continue;
    copy ??= { ...properties };
    copy[name] = next;
  }
  return copy ?? properties;
}

/**
 * The entity with every event-name field's enum filled in from the declared events (sorted); the
 * same definition when none of its fields takes event names.
 */
export function withEventNames(definition: AnyEntity, declared: ReadonlySet<string>): AnyEntity {
  const events = [...declared].sort();
  const fields = substituteProperties(definition.fields, events) as AnyEntity['fields'];
  return fields === definition.fields ? definition : { ...definition, fields };
}

/**
 * The vendor keyword marking a string field whose values are the declared feature names
 * (ModuleDefinition.features): a plan's features. Filled in at boot like event names, so that an
 * unknown name is refused by validation (422 at its pointer) and the admin shell offers the list.
 */
export const FEATURE_NAMES = 'x-feature-names';

/** A field (or array item) that takes a declared feature name. */
export function FeatureName(options: TStringOptions = {}): TString {
  return Type.String({ ...options, [FEATURE_NAMES]: { also: [] } satisfies EventNameMark });
}

/** The entity with every feature-name field's enum filled in from the declared features (sorted). */
export function withFeatureNames(definition: AnyEntity, declared: Iterable<string>): AnyEntity {
  const features = [...declared].sort();
  // No module declares a feature: the field stays a plain string (an empty enum admits nothing).
  if (features.length === 0) return definition;
  const fields = substituteProperties(definition.fields, features, FEATURE_NAMES) as AnyEntity['fields'];
  return fields === definition.fields ? definition : { ...definition, fields };
}

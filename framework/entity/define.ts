/**
 * The author API, one import for modules: what a module declares (module-definition.ts), its
 * entities (entity-definition.ts), routes (route-definition.ts), and the row and value types they
 * share (entity-values.ts). Split by responsibility; this file only gathers them.
 */
export * from './entity-values.ts';
export * from './entity-definition.ts';
export * from './route-definition.ts';
export * from './module-definition.ts';
export * from './field-text.ts';
export { Secret } from './secret-field.ts';

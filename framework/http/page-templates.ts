import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { Config } from '../config/schema.ts';

const shipped = fileURLToPath(new URL('../../templates', import.meta.url));

/** Renders a page template by name, e.g. render('content/public-page', { page }). */
export type PageRenderer = (name: string, data: object) => string;

/**
 * The public pages' templates: the installation's own (templates.dir) where it has one of that
 * name, else the shipped one under templates/. Every value is escaped unless a template asks for
 * raw output (`<%~ %>`). Which file serves a name is decided at its first render and kept, as eta
 * keeps the compiled template: an edited or added override is picked up by a restart.
 */
export function pageRenderer(config: Config): PageRenderer {
  const dir = config.templates.dir;
  const overrides = dir ? (isAbsolute(dir) ? dir : resolve(dir)) : undefined;
  const own = overrides ? new Eta({ views: overrides, cache: true, autoEscape: true }) : undefined;
  const base = new Eta({ views: shipped, cache: true, autoEscape: true });
  const chosen = new Map<string, Eta>();
  return (name, data) => {
    let eta = chosen.get(name);
    if (!eta) {
      eta = own && overrides && existsSync(join(overrides, `${name}.eta`)) ? own : base;
      chosen.set(name, eta);
    }
    return eta.render(`./${name}`, data);
  };
}

const renderers = new WeakMap<Config, PageRenderer>();

/** The renderer of one configuration, made once (tests start apps with configurations of their own). */
export function pageRendererFor(config: Config): PageRenderer {
  let renderer = renderers.get(config);
  if (!renderer) {
    renderer = pageRenderer(config);
    renderers.set(config, renderer);
  }
  return renderer;
}

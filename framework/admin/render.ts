import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';

const views = fileURLToPath(new URL('../../templates', import.meta.url));

/**
 * How a template renders another (a component, a generated page's part): `component(name, data)`,
 * which hands the component exactly `data`. Eta's own `include(name, data)` merges the including
 * template's data under it, so a page's fields reached every component it included: the files
 * page's `items` became the list of the "uploaded" notice. The helper makes the same call as
 * include, with the template's options (so a relative name resolves from the including file), and
 * leaves the merge out. The shell's templates call component() only (test/admin/template-data.test.ts).
 */
const COMPONENT_HELPER = 'const component = (name, data) => this.render(name, data ?? {}, options);';

/**
 * The admin shell's templates (templates/admin/): every value escaped unless a template asks for
 * raw output (`<%~ %>`), which the shell uses only for HTML it rendered itself. Compiled once and
 * cached for the life of the process.
 */
const eta = new Eta({ views, cache: true, autoEscape: true, functionHeader: COMPONENT_HELPER });

/** Renders templates/<name>.eta, e.g. renderTemplate('./admin/components/badge', { text: '3' }). */
export const renderTemplate = (name: string, data: object): string => eta.render(name, data);

import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';

const views = fileURLToPath(new URL('../../templates', import.meta.url));

/**
 * The admin shell's templates (templates/admin/): every value escaped unless a template asks for
 * raw output (`<%~ %>`), which the shell uses only for HTML it rendered itself. Compiled once and
 * cached for the life of the process.
 */
const eta = new Eta({ views, cache: true, autoEscape: true });

/** Renders templates/<name>.eta, e.g. renderTemplate('./admin/components/badge', { text: '3' }). */
export const renderTemplate = (name: string, data: object): string => eta.render(name, data);

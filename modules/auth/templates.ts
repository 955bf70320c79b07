import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';

const views = fileURLToPath(new URL('../../templates', import.meta.url));

/** Pages escape every value; plain-text mail must not (a link with &amp; would break). */
const pages = new Eta({ views, cache: true, autoEscape: true });
const mails = new Eta({ views, cache: true, autoEscape: false });

export const renderPage = (name: string, data: Record<string, unknown>): string => pages.render(name, data);
export const renderMail = (name: string, data: Record<string, unknown>): string => mails.render(name, data);

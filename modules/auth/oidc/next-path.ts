// The rule lives with the framework's access code: the admin login form applies it too.
export { DEFAULT_LANDING, safeNextPath } from '../../../framework/access/next-path.ts';

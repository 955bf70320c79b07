/**
 * npm run admin:invite -- you@example.com [--name "Your Name"] [--tenant <slug>] [--config config.yaml]
 *
 * Makes the address an administrator of the operator tenant (or of the tenant --tenant names) and
 * prints a set-password link (also mailed when SMTP is configured). Works whether or not the service is running: with no
 * database.url it uses the embedded PostgreSQL the running service holds, or starts it for the
 * duration of the command. Migrations and the operator tenant are ensured as on a service start.
 */
import { parseArgs } from 'node:util';
import { Compile } from 'typebox/compile';
import { loadConfig } from '../framework/config/load.ts';
import { isCommandRefusal, openCommandApp, type CommandApp } from './command-database.ts';
import { userFields } from '../modules/user/user.fields.ts';

const USAGE =
  'usage: npm run admin:invite -- you@example.com [--name "Your Name"] [--tenant <slug>] [--config config.yaml]';
const validEmail = Compile(userFields.email);

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      tenant: { type: 'string' },
      config: { type: 'string', default: 'config.yaml' },
    },
  });
  const email = positionals[0]?.trim() ?? '';
  if (positionals.length !== 1 || !validEmail.Check(email)) {
    process.stderr.write(`${positionals.length === 1 ? `not an email address: ${email}\n` : ''}${USAGE}\n`);
    return 2;
  }
  const config = loadConfig(values.config);
  // Loaded only once the arguments are known good: the modules take a moment to load.
  const [{ allModules }, { inviteAdministrator }] = await Promise.all([
    import('../modules/index.ts'),
    import('../modules/auth/administrator-invite.ts'),
  ]);
  let command: CommandApp | undefined;
  try {
    command = await openCommandApp(config, { modules: allModules });
    const result = await inviteAdministrator(command.app.services, email, values.name, values.tenant);
    const where = values.tenant ? `tenant ${values.tenant}` : 'the operator tenant';
    const out = [
      result.created
        ? `Invited ${result.email} as administrator of ${where}.`
        : result.adminRoleAdded
          ? `${result.email} already exists in ${where}: added the admin role to it. Here is a new set-password link (earlier links no longer work).`
          : `${result.email} already exists in ${where} and already holds the admin role. Here is a new set-password link (earlier links no longer work).`,
      '',
      'Open this link to choose a password (it works once):',
      '',
      `  ${result.link}`,
      '',
      result.mailed ? `The link was also mailed to ${result.email}.` : '',
      result.mailError ? `Mailing the link failed (${result.mailError}); use the link above.` : '',
      'Then sign in with that address and password at /admin/login, or: POST /api/v1/auth/login {"email","password"}.',
    ].filter((line, i, all) => line !== '' || all[i - 1] !== '');
    process.stdout.write(`${out.join('\n')}\n`);
    return 0;
  } finally {
    await command?.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    const known = isCommandRefusal(err) || err.name === 'AdministratorInviteError';
    process.stderr.write(`admin:invite: ${known ? err.message : (err.stack ?? err.message)}\n`);
    process.exit(1);
  },
);

import type { FastifyRequest } from 'fastify';
import type { Services, TenantRef } from '../../../framework/entity/define.ts';
import { endSession, openSession } from '../../../framework/access/sessions.ts';
import { usersService } from '../../user/users-service.ts';
import '../auth-tables.ts';
import { refused } from './issuer-client.ts';

/**
 * Opens a session for the active user this tenant has at the address, exactly as login does: the
 * session the browser carried before (if any) is deleted, a fresh one opened, auth.logged_in
 * published. Single sign-on creates nobody. The lookup runs first so the writing transaction can
 * carry the user as the actor of the event.
 */
export async function signInByAddress(
  services: Services,
  tenant: TenantRef,
  email: string,
  request: Pick<FastifyRequest, 'headers' | 'ip'>,
  previousSessionId: string | undefined,
): Promise<{ userId: string; rawSessionId: string }> {
  // The address comes from the issuer, past no request validation: one holding NUL, which
  // PostgreSQL cannot take as text and no stored address holds, is nobody's.
  const user = email.includes('\u0000')
    ? undefined
    : await services.transactions.run(tenant, async (tx) => {
        const found = await usersService.findByEmail(tx, email);
        return found && { id: found.id, status: found.status };
      });
  if (!user) {
    throw refused(
      'unknown_address',
      'No account on this site has the address the identity provider returned; single sign-on creates no accounts',
    );
  }
  if (user.status !== 'active') {
    throw refused(
      'user_not_active',
      'The account at this address is not active (invited and not yet set up, or deactivated)',
    );
  }
  return services.transactions.run(
    tenant,
    async (tx) => {
      // Re-checked under a row lock in the writing transaction, so a deactivation committed between
      // the lookup and the insert cannot slip a session through.
      const locked = await usersService.lock(tx, user.id, { share: true });
      if (locked?.status !== 'active') {
        throw refused(
          'user_not_active',
          'The account at this address is not active (invited and not yet set up, or deactivated)',
        );
      }
      if (previousSessionId) await endSession(tx, previousSessionId);
      const rawSessionId = await openSession(tx, user.id, request);
      tx.publish('auth.logged_in', { method: 'oidc', userId: user.id });
      return { userId: user.id, rawSessionId };
    },
    { actorId: user.id },
  );
}

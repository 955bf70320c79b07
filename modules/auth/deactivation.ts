import type { SubscriptionDefinition } from '../../framework/entity/define.ts';
import { endSessions } from '../../framework/access/sessions.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';

/**
 * On user.deactivated: ends every session of the person. Their sessions already stop counting
 * the moment the status changes (a session resolves only for an active user); this removes them.
 */
export const endSessionsOnDeactivation: SubscriptionDefinition = {
  name: 'auth-end-sessions-on-deactivation',
  event: 'user.deactivated',
  async handle(ctx, event) {
    const id = typeof event.payload.id === 'string' ? event.payload.id : '';
    if (!isUuid(id)) return;
    await endSessions(ctx, id);
  },
};

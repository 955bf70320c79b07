import { describe, expect, it } from 'vitest';
import { formatDateTime } from '../../../framework/format.ts';
import { invitationText } from '../../../modules/auth/invitation-mail.ts';
import { tokenExpiry } from '../../../modules/auth/set-password-tokens.ts';

// Issue 42, point 4: a mail says when its link stops working as the pages say a date, by the one
// formatter (framework/format.ts), and it names the zone: the mail is read wherever the person is.
// The reset mail, through its subscription: test/modules/auth/reset-link.test.ts.

const SENT = new Date('2026-11-27T08:26:51.934Z');

describe('the mails say their dates by the one formatter, with the zone', () => {
  it('the invitation says until when its link works: 4 Dec 2026, 08:26 UTC', () => {
    const text = invitationText({
      name: 'Ada',
      tenant: 'Acme Inc.',
      link: 'https://acme.example/auth/reset?token=x',
      expiresAt: tokenExpiry(SENT, 'invitation'),
      purpose: 'invitation',
    });
    expect(text).toContain('until 4 Dec 2026, 08:26 UTC (7 days from when it was sent)');
    expect(formatDateTime(tokenExpiry(SENT, 'invitation'))).toBe('4 Dec 2026, 08:26 UTC');
  });

  it('an administrator’s link for a person who already signs in lasts a day, and says so', () => {
    const text = invitationText({
      name: '',
      tenant: 'Acme Inc.',
      link: 'https://acme.example/auth/reset?token=x',
      expiresAt: tokenExpiry(SENT, 'reset'),
      purpose: 'reset',
    });
    expect(text).toContain('until 28 Nov 2026, 08:26 UTC (1 day from when it was sent)');
  });
});

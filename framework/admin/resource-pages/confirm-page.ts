import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import type { ProblemError } from '../../errors.ts';
import type { AdminPageContext } from '../page.ts';
import { problemText } from '../errors.ts';

/** What a confirmation asks (templates/admin/components/confirm.eta): the form's target, the question, its two ways out. */
export interface Confirmation {
  /** Where the confirm button posts (the page's own path, with what it needs in the query). */
  action: string;
  question: string;
  confirmLabel: string;
  cancelHref: string;
}

/**
 * A page that asks before an irreversible post (delete, restore), through the shell's confirm
 * component with the page's CSRF token; after a refusal the same page again, with the problem's
 * sentence above the question and the refusal's status.
 */
export function renderConfirmPage(
  ctx: AdminPageContext,
  title: string,
  confirm: Confirmation,
  refused?: ProblemError,
): Promise<string> {
  return ctx.render({
    title,
    template: './admin/generated/delete',
    ...(refused ? { status: refused.status } : {}),
    data: {
      title,
      alert: refused ? refusalAlert(refused) : null,
      confirm: { ...confirm, csrfField: FORM_TOKEN_FIELD, csrf: ctx.csrf() },
    },
  });
}

/** A refusal as the alert component shows it: its sentence and detail for the person, its code in data-code. */
function refusalAlert(refused: ProblemError): object {
  const text = problemText(refused);
  return { kind: 'error', title: text.sentence, items: text.detail ? [text.detail] : [], code: refused.code };
}

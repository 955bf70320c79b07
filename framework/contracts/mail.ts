/** One message to one address: plain text (no HTML, so no markup to escape). */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** Sends mail: SMTP (mail.host) or an in-memory mailbox the tests and operators read (framework/mail/mailer.ts). */
export interface Mailer {
  readonly mode: 'smtp' | 'memory';
  send(message: MailMessage): Promise<void>;
  close(): void;
}

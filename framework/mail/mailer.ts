import type { Transporter } from 'nodemailer';
import type { Config } from '../config/schema.ts';
import type { MailMessage, Mailer } from '../contracts/mail.ts';

export type { MailMessage, Mailer } from '../contracts/mail.ts';

/** Without mail.host, messages land here; tests and operators read them back. */
export class MemoryMailbox implements Mailer {
  readonly mode = 'memory' as const;
  readonly messages: (MailMessage & { from: string; at: Date })[] = [];
  private readonly from: string;

  constructor(from: string) {
    this.from = from;
  }

  async send(message: MailMessage): Promise<void> {
    this.messages.push({ ...message, from: this.from, at: new Date() });
    if (this.messages.length > 1000) this.messages.shift();
  }

  close(): void {}
}

/**
 * Mail over SMTP. nodemailer is loaded when such a mailer is made (at boot, when mail.host is set),
 * not with this file: a process whose mail stays in memory never holds its code.
 */
export class SmtpMailer implements Mailer {
  readonly mode = 'smtp' as const;
  private readonly transport: Promise<Transporter>;
  private readonly from: string;

  constructor(config: Config['mail']) {
    this.from = config.from;
    this.transport = import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        host: config.host,
        port: config.port,
        secure: config.secure,
        ...(config.username ? { auth: { user: config.username, pass: config.password } } : {}),
      }),
    );
    // Awaited by send, which reports a failure to load; nothing else is to be told of it.
    this.transport.catch(() => {});
  }

  async send(message: MailMessage): Promise<void> {
    const transport = await this.transport;
    await transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text });
  }

  close(): void {
    this.transport.then(
      (transport) => transport.close(),
      () => {},
    );
  }
}

export function createMailer(config: Config['mail']): Mailer {
  return config.host ? new SmtpMailer(config) : new MemoryMailbox(config.from);
}

import nodemailer, { type Transporter } from 'nodemailer';
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

export class SmtpMailer implements Mailer {
  readonly mode = 'smtp' as const;
  private readonly transport: Transporter;
  private readonly from: string;

  constructor(config: Config['mail']) {
    this.from = config.from;
    this.transport = nodemailer.createTransport({
      host: config.host,
      port: config.port,
      secure: config.secure,
      ...(config.username ? { auth: { user: config.username, pass: config.password } } : {}),
    });
  }

  async send(message: MailMessage): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text });
  }

  close(): void {
    this.transport.close();
  }
}

export function createMailer(config: Config['mail']): Mailer {
  return config.host ? new SmtpMailer(config) : new MemoryMailbox(config.from);
}

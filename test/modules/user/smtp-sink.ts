import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';

export interface DeliveredMail {
  envelopeTo: string[];
  headers: Record<string, string>;
  text: string;
}

/**
 * A real SMTP server on localhost that keeps what it receives. Recipients for which reject()
 * returns true are refused at RCPT TO, as a mail server refusing delivery would.
 */
export class SmtpSink {
  readonly messages: DeliveredMail[] = [];
  readonly refused: string[] = [];
  reject: (address: string) => boolean = () => false;
  private readonly server: SMTPServer;
  port = 0;

  constructor() {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onRcptTo: (address, _session, callback) => {
        if (this.reject(address.address)) {
          this.refused.push(address.address);
          const err = Object.assign(new Error('mailbox unavailable'), { responseCode: 550 });
          return callback(err);
        }
        callback();
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          this.messages.push({
            envelopeTo: session.envelope.rcptTo.map((r) => r.address),
            ...parseMessage(Buffer.concat(chunks).toString('utf8')),
          });
          callback();
        });
      },
    });
  }

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this.port;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  to(address: string): DeliveredMail[] {
    // Mail servers may change the letter case of an address; the domain part is case-insensitive anyway.
    return this.messages.filter((m) => m.envelopeTo.some((to) => to.toLowerCase() === address.toLowerCase()));
  }
}

/** Headers (unfolded, lower-case names) and the decoded plain-text body of a single-part message. */
export function parseMessage(raw: string): { headers: Record<string, string>; text: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const encoding = (headers['content-transfer-encoding'] ?? '7bit').toLowerCase();
  let text = body;
  if (encoding === 'quoted-printable') {
    text = Buffer.from(
      body
        .replace(/=\r\n/g, '')
        .replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
      'latin1',
    ).toString('utf8');
  } else if (encoding === 'base64') {
    text = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  }
  return { headers, text: text.replace(/\r\n/g, '\n') };
}

/** The one set-password link in a message body. */
export function linkIn(mail: DeliveredMail): URL {
  const found = mail.text.match(/https?:\/\/\S+\/auth\/reset\?token=\S+/);
  if (!found) throw new Error(`no set-password link in: ${mail.text}`);
  return new URL(found[0]);
}

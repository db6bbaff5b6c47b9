// A real SMTP server for tests of mail (smtp-server on loopback), and readers of what it received.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { startTestApp, type TestApp } from './app.ts';

export interface ReceivedMail {
  to: string[];
  raw: string;
}

/**
 * A real SMTP server on 127.0.0.1 that keeps what it receives; waitFor resolves on a mail to an address.
 * `refuseFirst` answers the first that many deliveries to each recipient with a temporary failure (451).
 */
export class MailCatcher {
  readonly mails: ReceivedMail[] = [];
  readonly refused = new Map<string, number>();
  private waiters: { to: string; resolve: (mail: ReceivedMail) => void }[] = [];
  constructor(private readonly refuseFirst = 0) {}
  readonly server = new SMTPServer({
    authOptional: true,
    // Plain SMTP on loopback: no STARTTLS offered, so the client does not try to upgrade.
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo: (address, _session, callback) => {
      const to = address.address.toLowerCase();
      const refused = this.refused.get(to) ?? 0;
      if (refused >= this.refuseFirst) return callback();
      this.refused.set(to, refused + 1);
      callback(Object.assign(new Error('Mailbox busy, try again later'), { responseCode: 451 }));
    },
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const mail = {
          to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          raw: Buffer.concat(chunks).toString('utf8'),
        };
        this.mails.push(mail);
        for (const waiter of this.waiters.filter((w) => mail.to.includes(w.to))) waiter.resolve(mail);
        this.waiters = this.waiters.filter((w) => !mail.to.includes(w.to));
        callback();
      });
    },
  });

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.server.address() as AddressInfo).port;
  }

  waitFor(to: string): Promise<ReceivedMail> {
    const found = this.mails.find((m) => m.to.includes(to.toLowerCase()));
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => this.waiters.push({ to: to.toLowerCase(), resolve }));
  }

  mailsTo(to: string): ReceivedMail[] {
    return this.mails.filter((m) => m.to.includes(to.toLowerCase()));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The mail's text with quoted-printable encoding undone (soft line breaks, =XX escapes). */
export function textOf(mail: ReceivedMail): string {
  return mail.raw
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/** The reset token in a mail. */
export function tokenIn(mail: ReceivedMail): string {
  const text = textOf(mail);
  const match = text.match(/prt_[A-Za-z0-9_-]{20,}/);
  assert.ok(match, `no token in mail:\n${mail.raw}`);
  return match[0];
}

/**
 * A test app whose mail goes over SMTP to `catcher` (listening from now on), trusting X-Forwarded-For so each
 * test picks its client address, with links built on `publicUrl`. Its close() also closes the mailer and the
 * catcher.
 */
export async function startAppWithMail(catcher: MailCatcher, publicUrl: string): Promise<TestApp> {
  const port = await catcher.listen();
  const t = await startTestApp({
    config: { trustProxy: true, smtpUrl: `smtp://127.0.0.1:${port}`, publicUrl },
  });
  const close = t.close;
  t.close = async () => {
    await close();
    t.ctx.mailer.close();
    await catcher.close();
  };
  return t;
}

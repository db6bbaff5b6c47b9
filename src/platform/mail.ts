// Outgoing e-mail (password reset). With SMTP_URL set, mail goes out through that SMTP server (nodemailer);
// without it, the message is written to the log so a developer can follow the link. One mailer for the app.
import type { FastifyBaseLogger } from 'fastify';
import type { Transporter } from 'nodemailer';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export const MAIL_FROM = 'Commsplatform <no-reply@commsplatform.local>';

export function createMailer(
  smtpUrl: string | undefined,
  log: FastifyBaseLogger,
  production = false,
): Mailer {
  if (!smtpUrl) {
    return {
      async send(message) {
        // In production a mail's body (a password-reset link) must not reach logs that others can read: only
        // that a mail could not be sent is logged. Elsewhere the log is how a developer gets the link.
        if (production) {
          log.error({ to: message.to, subject: message.subject }, 'SMTP_URL is not set: e-mail not sent');
          return;
        }
        log.info({ mail: message }, 'SMTP_URL is not set: e-mail written to the log instead of sent');
      },
      close() {},
    };
  }
  const url = new URL(smtpUrl);
  // nodemailer (about 300 KB of the bundle) is loaded with the first mail, not at every start.
  let transporter: Promise<Transporter> | undefined;
  const open = () =>
    (transporter ??= import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        host: url.hostname,
        port: Number(url.port || (url.protocol === 'smtps:' ? 465 : 587)),
        // smtps:// is TLS from the first byte; smtp:// upgrades with STARTTLS when the server offers it.
        secure: url.protocol === 'smtps:',
        // `?ignoreTLS=true` for a local mail catcher that speaks plain SMTP only.
        ignoreTLS: url.searchParams.get('ignoreTLS') === 'true',
        auth: url.username
          ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }
          : undefined,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 20_000,
      }),
    ));
  return {
    async send(message) {
      await (await open()).sendMail({ from: MAIL_FROM, ...message });
    },
    close() {
      void transporter?.then((opened) => opened.close());
    },
  };
}

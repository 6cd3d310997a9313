/**
 * Mail the platform sends (today: invitations). A deployment hands `createPlatform` its own
 * `Mailer` (an email service's client); outside production the default is the development
 * mailbox, which sends nothing and shows what would have been sent at `/dev/mailbox`.
 *
 * @see docs/api/members.md "Mail"
 */

export interface MailMessage {
  to: string;
  subject: string;
  /** Plain text; links in it are written out in full. */
  text: string;
}

export interface Mailer {
  /** Sends one message; a rejection means it was not sent. */
  send(message: MailMessage): Promise<void>;
}

export interface SentMail extends MailMessage {
  sentAt: Date;
}

/** How many messages the development mailbox keeps; older ones are dropped. */
export const DEV_MAILBOX_SIZE = 100;

/**
 * The development mailer: keeps the last `DEV_MAILBOX_SIZE` messages in this process's memory
 * and sends nothing.
 */
export class DevMailbox implements Mailer {
  readonly #sent: SentMail[] = [];

  async send(message: MailMessage): Promise<void> {
    this.#sent.unshift({ ...message, sentAt: new Date() });
    this.#sent.length = Math.min(this.#sent.length, DEV_MAILBOX_SIZE);
  }

  /** What was sent, newest first. */
  sent(): readonly SentMail[] {
    return this.#sent;
  }
}

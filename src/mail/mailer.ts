import { createTransport, type Transporter } from 'nodemailer';
import type { Orm } from '../db/orm';
import { AppError } from '../errors/catalog';
import { MailOutbox, type MailMeta, type MailStatus } from './outbox.entity';
import type { MailContent } from './templates';
import { stderrLogger, type Logger } from '../kernel/logger';

export interface MailerOptions {
  /** `smtp://user:pass@host:587` or `smtps://host:465`; unset keeps mail in the outbox only. */
  smtpUrl?: string;
  /** The From header, e.g. `Atrium <no-reply@example.com>`. */
  from: string;
  logger?: Logger;
  /** SMTP attempts per mail before it stays `failed` for good (default 5). */
  maxAttempts?: number;
}

export interface SendOptions {
  /** Identifiers for tracing (userId, companyId, requestId), stored with the mail. Never secrets. */
  meta?: MailMeta;
}

/** What became of one mail. */
export interface MailReceipt {
  /** The outbox row id (`atrium mail-outbox --show <id>`). */
  id: string;
  status: MailStatus;
  attempts: number;
  /** The SMTP error of the last attempt, when it failed. */
  error?: string;
}

export interface RetryResult {
  attempted: number;
  sent: number;
  failed: number;
}

/** A `pending` row whose attempt started longer ago than this was interrupted (crash) and is retried. */
const STALE_ATTEMPT_MS = 10 * 60 * 1000;
const MAX_ERROR_LENGTH = 1000;
/** One address, no display name, nothing that could add a header or a second recipient. */
const ADDRESS = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;
const TEMPLATE_NAME = /^[a-z0-9_.-]{1,64}$/;
/** What replaces the body of a mail once the one-time link it carried has expired. */
const FORGOTTEN = 'The one-time link this mail carried has expired, so its text was removed from the outbox.';

/**
 * Sends mail through SMTP (`SMTP_URL`) with an outbox table in front: every
 * mail is stored first, so nothing is lost. Without SMTP the stored mail is
 * marked `logged` and a log line names it; an operator reads it with
 * `atrium mail-outbox --show <id>`.
 *
 * ```ts
 * await kernel.mailer.enqueue(user.email, passwordReset({ link, expiresInMinutes: 60 }), { meta: { userId: user.id } });
 * ```
 *
 * - `send()` waits for the SMTP attempt; `enqueue()` returns once the mail is
 *   stored and delivers in the background (use it where response time must
 *   not reveal anything, e.g. password reset for an unknown address).
 * - A failed delivery never throws: the row stays `failed` and is retried by
 *   `retryFailed()` (every `MAIL_RETRY_SECONDS` in a running server) up to
 *   `maxAttempts`. Only an invalid address or a database error throws.
 * - The mail is written in its own unit of work (like the audit log): call
 *   it after your own changes are flushed, and never inside
 *   `em.transactional()` (SQLite has one connection; the write would wait on
 *   your transaction).
 * - Delivery is at least once: a retry after an ambiguous failure repeats
 *   the same Message-ID, so receiving servers can tell the two apart.
 */
export class Mailer {
  private readonly transport: Transporter | undefined;
  private readonly maxAttempts: number;
  private readonly messageIdDomain: string;
  private readonly logger: Logger;
  private readonly inflight = new Set<Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;
  private retrying = false;

  constructor(
    private readonly orm: Orm,
    private readonly options: MailerOptions,
  ) {
    this.logger = options.logger ?? stderrLogger();
    this.maxAttempts = options.maxAttempts ?? 5;
    this.messageIdDomain = /@([^\s<>@]+)>?\s*$/.exec(options.from)?.[1] ?? 'localhost';
    this.transport = options.smtpUrl
      ? createTransport({
          url: options.smtpUrl,
          // Bounded waits (options in the URL's query string win over these).
          connectionTimeout: 10_000,
          greetingTimeout: 10_000,
          socketTimeout: 30_000,
        })
      : undefined;
  }

  /** Whether an SMTP server is configured (otherwise mail is only stored). */
  get smtpConfigured(): boolean {
    return this.transport !== undefined;
  }

  /**
   * Stores the mail, then delivers it and waits for the outcome: `sent`,
   * `failed` (kept for a retry) or `logged` (no SMTP configured).
   */
  async send(to: string, mail: MailContent, options: SendOptions = {}): Promise<MailReceipt> {
    const row = await this.store(to, mail, options.meta);
    if (row.status === 'logged') return receipt(row);
    return this.attempt(row);
  }

  /**
   * Stores the mail and returns (`pending`, or `logged` without SMTP);
   * delivery runs in the background. `idle()` waits for it.
   */
  async enqueue(to: string, mail: MailContent, options: SendOptions = {}): Promise<MailReceipt> {
    const row = await this.store(to, mail, options.meta);
    if (row.status === 'pending') this.track(this.attempt(row));
    return receipt(row);
  }

  /**
   * Re-attempts `failed` mail (and `pending` mail whose attempt was
   * interrupted), oldest first, one at a time, while attempts remain.
   * Without SMTP it does nothing.
   */
  async retryFailed(options: { limit?: number } = {}): Promise<RetryResult> {
    const result: RetryResult = { attempted: 0, sent: 0, failed: 0 };
    if (!this.transport) return result;
    await this.forgetExpiredSecrets();
    const staleBefore = new Date(Date.now() - STALE_ATTEMPT_MS);
    const due = await this.orm.em.fork().find(
      MailOutbox,
      {
        attempts: { $lt: this.maxAttempts },
        $or: [
          { status: 'failed' },
          { status: 'pending', lastAttemptAt: null },
          { status: 'pending', lastAttemptAt: { $lt: staleBefore } },
        ],
      },
      { orderBy: { createdAt: 'asc', id: 'asc' }, limit: options.limit ?? 100 },
    );
    for (const row of due) {
      const outcome = await this.attempt(row);
      if (outcome.attempts === row.attempts) continue; // another worker took it
      result.attempted++;
      if (outcome.status === 'sent') result.sent++;
      else result.failed++;
    }
    return result;
  }

  /**
   * Blanks the body of every mail whose one-time link has expired: the link
   * is dead, and a copy of the database should hold no live link longer than
   * needed. Mail not delivered by then is given up (`failed`, never retried:
   * its link would not work). Runs before every outbox read and retry, and
   * with them in the background. Answers how many bodies it blanked.
   */
  async forgetExpiredSecrets(now = new Date()): Promise<number> {
    const em = this.orm.em.fork();
    await em.nativeUpdate(
      MailOutbox,
      { secretUntil: { $lte: now }, status: { $in: ['pending', 'failed'] } },
      { status: 'failed', attempts: this.maxAttempts, lastError: 'not delivered before the one-time link it carried expired' },
    );
    return em.nativeUpdate(
      MailOutbox,
      { secretUntil: { $lte: now } },
      { text: `${FORGOTTEN}\n`, html: `<p>${FORGOTTEN}</p>`, secretUntil: null },
    );
  }

  /**
   * Every `intervalSeconds` (0: never) until `close()`: retries failed mail
   * (`retryFailed()`) when SMTP is configured, and forgets expired secrets.
   */
  startHousekeeping(intervalSeconds: number): void {
    if (intervalSeconds <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (this.retrying) return;
      this.retrying = true;
      const run = (this.transport ? this.retryFailed() : this.forgetExpiredSecrets())
        .catch((error) => this.logger.error({ err: errorText(error) }, 'mail housekeeping failed'))
        .finally(() => {
          this.retrying = false;
        });
      this.track(run);
    }, intervalSeconds * 1000);
    this.timer.unref();
  }

  /** Recent mail, newest first (expired secrets forgotten first). */
  async list(options: { status?: MailStatus; limit?: number } = {}): Promise<MailOutbox[]> {
    await this.forgetExpiredSecrets();
    return this.orm.em.fork().find(MailOutbox, options.status ? { status: options.status } : {}, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: options.limit ?? 20,
    });
  }

  /** One stored mail, or null (expired secrets forgotten first). */
  async get(id: string): Promise<MailOutbox | null> {
    await this.forgetExpiredSecrets();
    return this.orm.em.fork().findOne(MailOutbox, { id: id.toLowerCase() });
  }

  /** Resolves once background deliveries started so far have finished. */
  async idle(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  /** Stops retrying, waits for background deliveries, closes the SMTP connection. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.idle();
    this.transport?.close();
  }

  private track(work: Promise<unknown>): void {
    this.inflight.add(work);
    void work.finally(() => this.inflight.delete(work));
  }

  private async store(to: string, mail: MailContent, meta: MailMeta | undefined): Promise<MailOutbox> {
    const address = to.trim();
    if (address.length > 320 || !ADDRESS.test(address)) {
      throw AppError.validation([{ loc: ['to'], msg: 'not a valid email address', type: 'value_error.email' }]);
    }
    if (!TEMPLATE_NAME.test(mail.template)) throw new TypeError(`invalid mail template name "${mail.template}"`);
    if (!mail.subject || mail.subject.length > 500 || /[\r\n]/.test(mail.subject)) {
      throw new TypeError('a mail subject is one line of 1 to 500 characters');
    }
    const em = this.orm.em.fork();
    const row = em.create(MailOutbox, {
      toAddress: address,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
      template: mail.template,
      status: this.transport ? 'pending' : 'logged',
      meta: meta ?? null,
      secretUntil: mail.secretUntil ?? null,
    });
    row.messageId = `<${row.id}@${this.messageIdDomain}>`;
    await em.flush();
    if (row.status === 'logged') {
      this.logger.info(
        { mailId: row.id, to: row.toAddress, subject: row.subject, template: row.template },
        `mail kept in the outbox (no SMTP_URL configured); read it with: atrium mail-outbox --show ${row.id}`,
      );
      // The body may hold a one-time link: only at debug level, for development.
      this.logger.debug({ mailId: row.id, text: row.text }, 'mail text');
    }
    return row;
  }

  /**
   * One SMTP attempt. The row is claimed by bumping `attempts` from the value
   * read, so two workers (a retry and a background send, or two processes on
   * one database) never deliver the same attempt twice. Never throws.
   */
  private async attempt(row: MailOutbox): Promise<MailReceipt> {
    const seen = row.attempts;
    const attempts = seen + 1;
    try {
      const em = this.orm.em.fork();
      const claimed = await em.nativeUpdate(
        MailOutbox,
        { id: row.id, attempts: seen, status: { $in: ['pending', 'failed'] } },
        { attempts, lastAttemptAt: new Date() },
      );
      if (claimed === 0) return { id: row.id, status: row.status, attempts: seen };
      try {
        const info = await this.transport!.sendMail({
          from: this.options.from,
          to: row.toAddress,
          subject: row.subject,
          text: row.text,
          html: row.html,
          messageId: row.messageId ?? undefined,
          headers: { 'Auto-Submitted': 'auto-generated' },
        });
        const messageId = typeof info.messageId === 'string' && info.messageId ? info.messageId : row.messageId;
        await em.nativeUpdate(MailOutbox, { id: row.id }, { status: 'sent', sentAt: new Date(), messageId, lastError: null });
        this.logger.info({ mailId: row.id, template: row.template, attempts, messageId }, 'mail sent');
        return { id: row.id, status: 'sent', attempts };
      } catch (error) {
        const message = errorText(error);
        await em.nativeUpdate(MailOutbox, { id: row.id }, { status: 'failed', lastError: message });
        this.logger.warn(
          { mailId: row.id, template: row.template, attempts, willRetry: attempts < this.maxAttempts, err: message },
          'mail delivery failed',
        );
        return { id: row.id, status: 'failed', attempts, error: message };
      }
    } catch (error) {
      // The database, not SMTP: the row keeps its last state and the retry picks it up.
      this.logger.error({ mailId: row.id, err: errorText(error) }, 'mail outbox update failed');
      return { id: row.id, status: row.status, attempts: seen, error: errorText(error) };
    }
  }
}

function receipt(row: MailOutbox): MailReceipt {
  return { id: row.id, status: row.status, attempts: row.attempts };
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.slice(0, MAX_ERROR_LENGTH);
}

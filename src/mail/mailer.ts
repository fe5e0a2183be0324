import { createTransport, type Transporter } from 'nodemailer';
import type { EntityManager } from '@mikro-orm/better-sqlite';
import type { Orm } from '../db/orm';
import { AppError } from '../errors/catalog';
import { MailOutbox, type MailMeta, type MailStatus } from './outbox.entity';
import type { MailContent } from './templates';
import { stderrLogger, type Logger } from '../kernel/logger';
import { afterCommit, currentEm, withUnitOfWork } from '../db/unit-of-work';
import type { JobQueue } from '../jobs/job-queue';

export interface MailerOptions {
  /** `smtp://user:pass@host:587` or `smtps://host:465`; unset keeps mail in the outbox only. */
  smtpUrl?: string;
  /** The From header, e.g. `Atrium <no-reply@example.com>`. */
  from: string;
  logger?: Logger;
  /** SMTP attempts per mail before it stays `failed` for good (default 5). */
  maxAttempts?: number;
  /** Seconds between automatic retries of a failed delivery (MAIL_RETRY_SECONDS; default 300); 0: none. */
  retrySeconds?: number;
}

export interface SendOptions {
  /** Identifiers for tracing (userId, companyId, requestId), stored with the mail. Never secrets. */
  meta?: MailMeta;
  /** What the mail's one-time link belongs to; `endMailLinks(em, ref)` ends the mail's secret when the link stops working early. */
  secretRef?: string;
}

/**
 * The one-time link of `ref` stopped working before its time (spent,
 * replaced, revoked): in the caller's transaction, its mails forget their
 * bodies at once, and their secret ends now, so one not delivered yet is
 * given up (`Mailer.forgetExpiredSecrets`) and never delivered.
 */
export async function endMailLinks(em: EntityManager, ref: string, now = new Date()): Promise<number> {
  return em.nativeUpdate(MailOutbox, { secretRef: ref, secretUntil: { $gt: now } }, { text: `${FORGOTTEN}\n`, html: `<p>${FORGOTTEN}</p>`, secretUntil: now });
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
const FORGOTTEN = 'The one-time link this mail carried has expired or was used or replaced, so its text was removed from the outbox.';

/** The job that delivers one stored mail (a kernel job; see Mailer.deliver). */
export const MAIL_DELIVER = 'mail.deliver';
/** The recurring job that blanks the bodies of mail whose one-time link expired (every MAIL_RETRY_SECONDS). */
export const MAIL_HOUSEKEEPING = 'mail.housekeeping';

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
 * - A mail is stored in the caller's unit of work, with its `mail.deliver`
 *   job: it commits with the change that caused it (a transactional outbox),
 *   and a change that rolls back sends nothing. Outside a unit of work it
 *   gets one of its own.
 * - `enqueue()` returns once the mail is stored; the job worker of a serving
 *   process delivers it. A failed delivery is retried by the job (every
 *   MAIL_RETRY_SECONDS, see the kernel) up to `maxAttempts`, then stays
 *   `failed`. `send()` also attempts the
 *   delivery at once and answers the outcome (the job is then the retry).
 * - Delivery is at least once: a retry after an ambiguous failure repeats
 *   the same Message-ID, so receiving servers can tell the two apart.
 */
export class Mailer {
  private readonly transport: Transporter | undefined;
  private readonly maxAttempts: number;
  private readonly retrySeconds: number;
  private readonly messageIdDomain: string;
  private readonly logger: Logger;

  constructor(
    private readonly orm: Orm,
    private readonly jobs: JobQueue,
    private readonly options: MailerOptions,
  ) {
    this.logger = options.logger ?? stderrLogger();
    this.maxAttempts = options.maxAttempts ?? 5;
    this.retrySeconds = options.retrySeconds ?? 300;
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
   * Stores the mail and its delivery job, then attempts the delivery at once
   * and answers the outcome: `sent`, `failed` (the job retries it) or
   * `logged` (no SMTP configured). For an operator or a caller that must
   * know; the domains enqueue. It commits at once: never call it inside a
   * `transaction()`.
   */
  async send(to: string, mail: MailContent, options: SendOptions = {}): Promise<MailReceipt> {
    // The job is the retry: due one retry interval from now, none without automatic retries.
    const row = await this.store(to, mail, options, 'retry');
    if (row.status === 'logged') return receipt(row);
    return this.attempt(row);
  }

  /**
   * Stores the mail (`pending`, or `logged` without SMTP) with its delivery
   * job, committed with the caller's unit of work; the job worker delivers it.
   */
  async enqueue(to: string, mail: MailContent, options: SendOptions = {}): Promise<MailReceipt> {
    return receipt(await this.store(to, mail, options, 'now'));
  }

  /**
   * The `mail.deliver` job: one attempt at a stored mail. Delivered or given
   * up: done. A failed attempt, or one another attempt is running, throws,
   * so the job is retried with backoff and then dead-lettered.
   */
  async deliver(mailId: string): Promise<void> {
    const row = await currentEm(this.orm).findOne(MailOutbox, { id: mailId }, { refresh: true });
    if (!row || row.status === 'sent' || row.status === 'logged' || row.attempts >= this.maxAttempts) return;
    // A link that no longer works is never delivered: the mail is given up and its body forgotten.
    if (row.secretUntil && row.secretUntil <= new Date()) return void (await this.forgetExpiredSecrets());
    if (row.status === 'pending' && row.lastAttemptAt && Date.now() - row.lastAttemptAt.getTime() < STALE_ATTEMPT_MS) {
      throw new Error('a delivery attempt of this mail is running');
    }
    const outcome = await this.attempt(row);
    if (outcome.status === 'sent') return;
    throw new Error(outcome.error ?? 'another delivery attempt of this mail was running');
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

  /** Closes the SMTP connection. */
  close(): void {
    this.transport?.close();
  }

  private async store(to: string, mail: MailContent, options: SendOptions, deliver: 'now' | 'retry'): Promise<MailOutbox> {
    const address = to.trim();
    if (address.length > 320 || !ADDRESS.test(address)) {
      throw AppError.validation([{ loc: ['to'], msg: 'not a valid email address', type: 'value_error.email' }]);
    }
    if (!TEMPLATE_NAME.test(mail.template)) throw new TypeError(`invalid mail template name "${mail.template}"`);
    if (!mail.subject || mail.subject.length > 500 || /[\r\n]/.test(mail.subject)) {
      throw new TypeError('a mail subject is one line of 1 to 500 characters');
    }
    return withUnitOfWork(this.orm, async () => {
      const em = currentEm(this.orm);
      const row = em.create(MailOutbox, {
        toAddress: address,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        template: mail.template,
        status: this.transport ? 'pending' : 'logged',
        meta: options.meta ?? null,
        secretUntil: mail.secretUntil ?? null,
        secretRef: mail.secretUntil ? (options.secretRef ?? null) : null,
      });
      row.messageId = `<${row.id}@${this.messageIdDomain}>`;
      if (row.status === 'pending' && (deliver === 'now' || this.retrySeconds > 0)) {
        this.jobs.enqueue(MAIL_DELIVER, { mailId: row.id }, {
          maxAttempts: this.retrySeconds > 0 ? this.maxAttempts : 1,
          ...(deliver === 'retry' ? { runAt: new Date(Date.now() + this.retrySeconds * 1000) } : {}),
        });
      }
      else afterCommit(em, () => this.logStored(row));
      // Registered before the flush: it commits here, or with the transaction this runs in.
      await em.flush();
      return row;
    });
  }

  private logStored(row: MailOutbox): void {
    this.logger.info(
      { mailId: row.id, to: row.toAddress, subject: row.subject, template: row.template },
      `mail kept in the outbox (no SMTP_URL configured); read it with: atrium mail-outbox --show ${row.id}`,
    );
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
        // `pending` with a fresh lastAttemptAt: an attempt is running (see deliver).
        { attempts, lastAttemptAt: new Date(), status: 'pending' },
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
          { mailId: row.id, template: row.template, attempts, willRetry: this.retrySeconds > 0 && attempts < this.maxAttempts, err: message },
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

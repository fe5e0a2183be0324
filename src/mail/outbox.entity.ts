import { DateTimeType, Entity, Index, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/**
 * - `pending`: stored, delivery not finished yet (or interrupted by a crash);
 * - `sent`: the SMTP server accepted it;
 * - `failed`: the last SMTP attempt failed; retried until the attempt limit;
 * - `logged`: no SMTP server is configured; kept here for an operator to read.
 */
export const mailStatuses = ['pending', 'sent', 'failed', 'logged'] as const;
export type MailStatus = (typeof mailStatuses)[number];

/** Identifiers a caller attaches to a mail for tracing (user, company, request). Never secrets. */
export type MailMeta = Record<string, string | number | boolean | null>;

/**
 * Every mail Atrium sends, written before delivery is attempted so nothing is
 * lost: without SMTP the table is the operator's mailbox (`atrium mail-outbox`).
 */
@Entity({ tableName: 'mail_outbox' })
@Index({ properties: ['status', 'createdAt'] })
@Index({ properties: ['createdAt'] })
@Index({ properties: ['secretUntil'] })
@Index({ properties: ['secretRef'] })
export class MailOutbox {
  [OptionalProps]?: 'id' | 'createdAt' | 'status' | 'attempts' | 'lastError' | 'lastAttemptAt' | 'sentAt' | 'messageId' | 'meta' | 'secretUntil' | 'secretRef';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  /** The one recipient address. */
  @Property({ type: 'string', length: 320 })
  toAddress!: string;

  @Property({ type: 'string', length: 500 })
  subject!: string;

  @Property({ type: 'text' })
  text!: string;

  @Property({ type: 'text' })
  html!: string;

  /** The template that rendered it, e.g. `password_reset`. */
  @Property({ type: 'string', length: 64 })
  template!: string;

  @Property({ type: 'string', length: 16 })
  status: MailStatus = 'pending';

  /** SMTP delivery attempts made so far. */
  @Property({ type: 'integer' })
  attempts: number = 0;

  @Property({ type: 'text', nullable: true })
  lastError: string | null = null;

  @Property({ type: DateTimeType, nullable: true })
  lastAttemptAt: Date | null = null;

  @Property({ type: DateTimeType, nullable: true })
  sentAt: Date | null = null;

  /** The Message-ID header; the same on every attempt of one mail. */
  @Property({ type: 'string', length: 255, nullable: true })
  messageId: string | null = null;

  @Property({ type: 'json', nullable: true })
  meta: MailMeta | null = null;

  /**
   * The body carries a one-time link that works until then. Past it the body
   * is replaced by a note (the link is dead anyway), so a copy of the
   * database holds no live link for longer than needed; null once forgotten
   * or when the mail carried no secret.
   */
  @Property({ type: DateTimeType, nullable: true })
  secretUntil: Date | null = null;

  /**
   * What the one-time link belongs to (`password_reset:<user id>`,
   * `invitation:<id>`): when that link stops working early (spent, replaced,
   * revoked), `endMailLinks` ends `secretUntil` with it.
   */
  @Property({ type: 'string', length: 100, nullable: true })
  secretRef: string | null = null;

  @Property({ type: DateTimeType })
  createdAt: Date = new Date();
}

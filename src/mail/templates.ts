import { clipText } from '../clip-text';

/**
 * The mail layout every template renders into: a plain-text part and an HTML
 * part, no external assets. Every interpolated value is HTML-escaped in the
 * HTML part and kept verbatim in the text part.
 *
 * A template lives with its domain (e.g. src/domains/identity/mail.ts): a
 * typed function that calls `render()` with a snake_case template name, a
 * subject, paragraphs and at most one action link.
 */

/** A rendered mail, ready for `Mailer.send(to, mail)`. */
export interface MailContent {
  /** snake_case template name, stored with the mail (`mail_outbox.template`). */
  template: string;
  subject: string;
  text: string;
  html: string;
  /**
   * The mail carries a one-time link that works until then; the outbox keeps
   * the body no longer (see Mailer.forgetExpiredSecrets). Absent: nothing secret.
   */
  secretUntil?: Date;
}

/** `minutes` from now, as a link's end of validity. */
export function inMinutes(minutes: number): Date {
  return new Date(Date.now() + minutes * 60_000);
}

export const PRODUCT = 'Atrium';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** Only absolute http(s) links go into a mail; anything else is a caller bug. */
function checkLink(link: string): string {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw new TypeError('mail link must be an absolute http(s) URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError('mail link must be an absolute http(s) URL');
  return url.href;
}

/** One line of free text from a caller (a name): no line breaks, bounded length. */
export function oneLine(value: string | null | undefined, max = 200): string {
  return clipText((value ?? '').replace(/\p{Cc}+/gu, ' ').trim(), max);
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** 30 -> "30 minutes", 60 -> "1 hour", 1440 -> "1 day", 90 -> "90 minutes". */
export function formatDuration(minutes: number): string {
  if (!Number.isInteger(minutes) || minutes <= 0) throw new TypeError('expiresInMinutes must be a positive integer');
  if (minutes % 1440 === 0) return plural(minutes / 1440, 'day');
  if (minutes % 60 === 0) return plural(minutes / 60, 'hour');
  return plural(minutes, 'minute');
}

/** "2026-12-24 10:00 UTC": unambiguous whatever the reader's locale. */
export function formatUtc(date: Date): string {
  if (!(date instanceof Date) || Number.isNaN(date.getTime())) throw new TypeError('expected a valid Date');
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export interface Layout {
  template: string;
  subject: string;
  /** The recipient's name for the greeting; "Hello," without one. */
  name?: string | null;
  /** Paragraphs before the action link (plain text). */
  intro: string[];
  /** The one action: a one-time link, which works until `validUntil`. */
  action?: { label: string; url: string; validUntil: Date };
  /** Paragraphs after the action link (plain text). */
  outro?: string[];
}

/** Renders one layout into the text and HTML parts. */
export function render(layout: Layout): MailContent {
  const name = oneLine(layout.name);
  const greeting = name ? `Hello ${name},` : 'Hello,';
  const outro = layout.outro ?? [];
  const url = layout.action ? checkLink(layout.action.url) : undefined;

  const text = [
    greeting,
    ...layout.intro,
    ...(layout.action && url ? [`${layout.action.label}:\n${url}`] : []),
    ...outro,
    `-- \n${PRODUCT}`,
  ].join('\n\n');

  const p = (s: string) => `<p style="margin:0 0 16px">${escapeHtml(s)}</p>`;
  const button =
    layout.action && url
      ? `<p style="margin:0 0 16px"><a href="${escapeHtml(url)}" style="display:inline-block;padding:10px 18px;background:#1f4fd1;color:#ffffff;text-decoration:none;border-radius:4px">${escapeHtml(layout.action.label)}</a></p>` +
        `<p style="margin:0 0 16px;font-size:13px;color:#555555">If the button does not work, copy this address into your browser:<br><a href="${escapeHtml(url)}" style="color:#1f4fd1;word-break:break-all">${escapeHtml(url)}</a></p>`
      : '';
  const html = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(layout.subject)}</title></head>
<body style="margin:0;padding:24px;background:#f4f4f5;font-family:Arial,Helvetica,sans-serif;font-size:15px;line-height:1.5;color:#18181b">
<div style="max-width:560px;margin:0 auto;padding:24px;background:#ffffff;border-radius:6px">
${[p(greeting), ...layout.intro.map(p), button, ...outro.map(p)].filter(Boolean).join('\n')}
<p style="margin:24px 0 0;font-size:13px;color:#71717a">${escapeHtml(PRODUCT)}</p>
</div>
</body>
</html>
`;
  const mail: MailContent = { template: layout.template, subject: layout.subject, text: `${text}\n`, html };
  if (layout.action) mail.secretUntil = layout.action.validUntil;
  return mail;
}


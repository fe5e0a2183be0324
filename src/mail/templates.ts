/**
 * The mail templates: each is a typed function returning a rendered mail (a
 * plain-text part and an HTML part, no external assets) for `Mailer.send`.
 * Every interpolated value is HTML-escaped in the HTML part and kept verbatim
 * in the text part.
 *
 * Adding a template (invitations, billing mails, ...): write a function that
 * calls `render()` with a snake_case template name, a subject, paragraphs and
 * at most one action link.
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
function inMinutes(minutes: number): Date {
  return new Date(Date.now() + minutes * 60_000);
}

const PRODUCT = 'Atrium';

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
function oneLine(value: string | null | undefined, max = 200): string {
  return (value ?? '').replace(/\p{Cc}+/gu, ' ').trim().slice(0, max);
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

interface Layout {
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

/** Confirms an address: at sign-up or when a user changes their email. */
export function emailVerification(input: { name?: string | null; link: string; expiresInMinutes: number }): MailContent {
  return render({
    template: 'email_verification',
    subject: `Confirm your email address for ${PRODUCT}`,
    name: input.name,
    intro: [`Please confirm that this is your email address for your ${PRODUCT} account.`],
    action: { label: 'Confirm email address', url: input.link, validUntil: inMinutes(input.expiresInMinutes) },
    outro: [
      `This link expires in ${formatDuration(input.expiresInMinutes)} and works once.`,
      'If you did not ask for this, ignore this mail: nothing changes without the confirmation.',
    ],
  });
}

export function passwordReset(input: { name?: string | null; link: string; expiresInMinutes: number }): MailContent {
  return render({
    template: 'password_reset',
    subject: `Reset your ${PRODUCT} password`,
    name: input.name,
    intro: [`Someone asked to reset the password of the ${PRODUCT} account for this email address.`],
    action: { label: 'Choose a new password', url: input.link, validUntil: inMinutes(input.expiresInMinutes) },
    outro: [
      `This link expires in ${formatDuration(input.expiresInMinutes)} and works once.`,
      'If you did not ask for this, ignore this mail: your password stays as it is.',
    ],
  });
}

export function accountDeletionScheduled(input: { name?: string | null; scheduledFor: Date; cancelLink: string }): MailContent {
  return render({
    template: 'account_deletion_scheduled',
    subject: `Your ${PRODUCT} account will be deleted`,
    name: input.name,
    intro: [
      `Your ${PRODUCT} account is scheduled for deletion on ${formatUtc(input.scheduledFor)}.`,
      'Until then you can change your mind and keep your account.',
    ],
    action: { label: 'Cancel the deletion', url: input.cancelLink, validUntil: input.scheduledFor },
    outro: [
      'After that time your account and its data are deleted for good.',
      'If you did not ask for this, cancel the deletion and change your password.',
    ],
  });
}

export function accountDeletionCancelled(input: { name?: string | null } = {}): MailContent {
  return render({
    template: 'account_deletion_cancelled',
    subject: `Your ${PRODUCT} account will not be deleted`,
    name: input.name,
    intro: [`The deletion of your ${PRODUCT} account was cancelled. Your account stays as it is.`],
    outro: ['If you did not cancel it yourself, sign in and review your account security.'],
  });
}

export function accountDeleted(input: { name?: string | null } = {}): MailContent {
  return render({
    template: 'account_deleted',
    subject: `Your ${PRODUCT} account was deleted`,
    name: input.name,
    intro: [`Your ${PRODUCT} account and its data have been deleted, as requested.`, 'Thank you for having used it.'],
  });
}

/** To the current address when a change of the account's email to `newEmail` is requested. */
export function emailChangeRequested(input: { name?: string | null; newEmail: string; expiresInMinutes: number }): MailContent {
  return render({
    template: 'email_change_requested',
    subject: `Your ${PRODUCT} email address is being changed`,
    name: input.name,
    intro: [
      `Someone signed in to your ${PRODUCT} account asked to change its email address to ${oneLine(input.newEmail, 320)}.`,
      `The change takes effect only when the link sent to that address is opened (within ${formatDuration(input.expiresInMinutes)}). ` +
        'Until then this address stays the one you sign in with.',
    ],
    outro: [
      'If you did not ask for this, sign in now and cancel the change in your account settings, then change your password ' +
        'and end your other sessions.',
    ],
  });
}

/** An invitation to join a company: the link opens the web app's accept page (single use). */
export function invitation(input: { companyName: string; inviterName?: string | null; role: string; link: string; expiresInDays: number }): MailContent {
  const company = oneLine(input.companyName) || 'a company';
  const inviter = oneLine(input.inviterName, 320);
  return render({
    template: 'invitation',
    subject: `You are invited to join ${company} on ${PRODUCT}`,
    intro: [
      `${inviter ? `${inviter} invited you` : 'You are invited'} to join ${company} on ${PRODUCT} as ${oneLine(input.role, 16)}.`,
      'Open the link to choose a password and create your account.',
    ],
    action: { label: 'Accept the invitation', url: input.link, validUntil: inMinutes(input.expiresInDays * 1440) },
    outro: [
      `This link expires in ${formatDuration(input.expiresInDays * 1440)} and works once.`,
      'If you did not expect this invitation, ignore this mail: no account is created without you.',
    ],
  });
}

/** To a user whose second factor an administrator turned off (POST /admin/users/{user_id}/disable-mfa). */
export function mfaDisabledByAdmin(input: { name?: string | null; companyName: string }): MailContent {
  return render({
    template: 'mfa_disabled_by_admin',
    subject: `Two-factor authentication was turned off for your ${PRODUCT} account`,
    name: input.name,
    intro: [
      `An administrator of ${oneLine(input.companyName)} turned off two-factor authentication (MFA) for your ${PRODUCT} account. ` +
        'Your authenticator app and recovery codes no longer work; signing in now needs only your password.',
    ],
    outro: [
      'Set up MFA again in your account settings to protect your account.',
      'If you did not expect this, contact your administrator and change your password.',
    ],
  });
}

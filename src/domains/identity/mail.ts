/**
 * The mails of the identity domain: sign-in links, account changes,
 * invitations. Each returns a rendered mail for `Mailer.enqueue`.
 */
import { formatDuration, formatUtc, inMinutes, oneLine, PRODUCT, render, type MailContent } from '../../mail/templates';

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

import { html, Html, renderPage } from './html';

/**
 * The account pages Atrium's mails and single sign-on link to. Each is a
 * server-rendered form; /assets/account.js posts it to the same public REST
 * endpoint a separate front end would call (so the same CSRF and Origin rules
 * apply) and shows whatever problem the API answers.
 */

const noscript = html`<noscript><p class="problem">This page needs JavaScript to call the Atrium API.</p></noscript>`;
/** Where account.js writes problems (role=alert: read out when it changes) and successes. */
const messages = html`<div id="problem" class="problem" role="alert" tabindex="-1" hidden></div>
<div id="done" class="done" role="status" tabindex="-1" hidden></div>`;

const passwordFields = (minLength: number) => html`<p><label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required minlength="${minLength}" maxlength="1024" aria-describedby="password-hint">
<small id="password-hint">At least ${minLength} characters. Your company may ask for more.</small></p>
<p><label for="password2">Repeat the password</label>
<input id="password2" name="password2" type="password" autocomplete="new-password" required minlength="${minLength}" maxlength="1024"></p>`;

/** The sign-in form; account.js shows it on pages that need a signed-in user. */
const signInForm = html`<form id="sign-in" class="card" hidden novalidate>
<h2>Sign in</h2>
<p><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required maxlength="320"></p>
<p><label for="sign-in-password">Password</label><input id="sign-in-password" name="password" type="password" autocomplete="current-password" required maxlength="1024"></p>
<p id="totp-field" hidden><label for="totp_code">Code from your authenticator app (or a recovery code)</label>
<input id="totp_code" name="totp_code" inputmode="numeric" autocomplete="one-time-code" maxlength="64"></p>
<p><button type="submit">Sign in</button> <a href="/app/reset-password">Forgot your password?</a></p>
</form>`;

interface AccountPage {
  title: string;
  main: Html;
}

const MIN_PASSWORD = 12;

export const accountPages: Record<string, AccountPage> = {
  '': {
    title: 'Your account',
    main: html`<h1>Your account</h1>${noscript}${messages}
<section id="signed-in" class="card" hidden aria-labelledby="who">
<h2 id="who">Signed in</h2>
<dl class="facts">
<dt>Name</dt><dd data-field="name"></dd>
<dt>Email</dt><dd data-field="email"></dd>
<dt>Role</dt><dd data-field="role"></dd>
<dt>Company</dt><dd data-field="company"></dd>
</dl>
<p><button type="button" id="sign-out">Sign out</button> <a href="/dashboard">Open the dashboard</a></p>
</section>
${signInForm}`,
  },
  'accept-invitation': {
    title: 'Accept your invitation',
    main: html`<h1>Accept your invitation</h1>${noscript}${messages}
<form id="accept-invitation" class="card" novalidate data-needs="token">
<p>Choose your name and a password to create your account.</p>
<p><label for="name">Your name <span class="optional">(optional)</span></label>
<input id="name" name="name" autocomplete="name" maxlength="200"></p>
${passwordFields(MIN_PASSWORD)}
<p><button type="submit">Create my account</button></p>
</form>`,
  },
  'reset-password': {
    title: 'Reset your password',
    main: html`<h1>Reset your password</h1>${noscript}${messages}
<form id="reset-password" class="card" novalidate data-needs="token" hidden>
${passwordFields(MIN_PASSWORD)}
<p><button type="submit">Set the new password</button></p>
</form>
<form id="request-reset" class="card" novalidate hidden>
<p>Enter your address; if it has an account, a link to set a new password is mailed to it.</p>
<p><label for="reset-email">Email</label><input id="reset-email" name="email" type="email" autocomplete="email" required maxlength="320"></p>
<p><button type="submit">Mail me a link</button></p>
</form>`,
  },
  'confirm-email': {
    title: 'Confirm your new email address',
    // A button, not an automatic call: mail scanners open links, and the token works once.
    main: html`<h1>Confirm your new email address</h1>${noscript}${messages}
<form id="confirm-email" class="card" novalidate data-needs="token">
<p>Your account's email changes to the address this link was sent to.</p>
<p><button type="submit">Confirm the new address</button></p>
</form>`,
  },
  'cancel-deletion': {
    title: 'Keep your account',
    main: html`<h1>Keep your account</h1>${noscript}${messages}
<form id="cancel-deletion" class="card" novalidate hidden>
<p id="deletion-when"></p>
<p><button type="submit">Cancel the deletion and keep my account</button></p>
</form>
${signInForm}`,
  },
  billing: {
    title: 'Credits and billing',
    // Where the payment processor's checkout returns (?topup= or ?subscription= success or cancelled).
    main: html`<h1>Credits and billing</h1>${noscript}${messages}
<section id="balance" class="card" hidden aria-labelledby="balance-title">
<h2 id="balance-title">Your company's credits</h2>
<p class="big"><span data-field="available"></span> <span class="unit">credits available</span></p>
<dl class="facts">
<dt>Plan</dt><dd data-field="plan"></dd>
<dt>Monthly</dt><dd data-field="monthly"></dd>
<dt>Purchased</dt><dd data-field="purchased"></dd>
<dt>Granted</dt><dd data-field="granted"></dd>
<dt>Held by running work</dt><dd data-field="held"></dd>
<dt>Next monthly credits</dt><dd data-field="period_end"></dd>
</dl>
<p><a href="/dashboard">Watch it live on the dashboard</a></p>
</section>
${signInForm}`,
  },
  mfa: {
    title: 'Two-factor sign-in',
    main: html`<h1>Two-factor sign-in</h1>${noscript}${messages}
<form id="sso-mfa" class="card" novalidate data-needs="challenge">
<p>Your account has two-factor authentication on. Enter the code from your authenticator app to finish signing in.</p>
<p><label for="code">Code (or a recovery code)</label>
<input id="code" name="totp_code" inputmode="numeric" autocomplete="one-time-code" required maxlength="64"></p>
<p><button type="submit">Finish signing in</button></p>
</form>`,
  },
};

export function accountPage(name: string): string | undefined {
  if (!Object.hasOwn(accountPages, name)) return undefined;
  const page = accountPages[name]!;
  return renderPage({ title: page.title, main: page.main, modules: ['account.js'], current: '/app', data: { page: name } });
}

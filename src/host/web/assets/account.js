// The account pages under /app: each form posts to the public REST endpoint a
// separate front end would call, and shows any problem the API answers.
import { api, currentProfile, showDone, showProblem, signOut, storeSession, submitting } from './api.js';

const { page } = JSON.parse(document.getElementById('page-data').textContent);
const params = new URLSearchParams(location.search);

const $ = (id) => document.getElementById(id);
const show = (node, visible = true) => {
  if (node) node.hidden = !visible;
};

/** Tokens arrive in the mailed link; once used, the address bar drops them (history, shoulder-surfing). */
function forgetQuery() {
  history.replaceState(null, '', location.pathname);
}

/** A form that needs `?token=` (or `?challenge=`) explains itself when opened without one. */
function needsParameter(form) {
  const name = form.dataset.needs;
  if (!name || params.get(name)) return true;
  show(form, false);
  showProblem({ message: `This page is opened from the link in your mail; the link's ${name} is missing. Open the link again, or copy the whole address from the mail.` });
  return false;
}

function passwordsMatch(form) {
  const first = form.elements.password.value;
  if (first !== form.elements.password2.value) {
    form.elements.password2.setAttribute('aria-invalid', 'true');
    showProblem({ message: 'The two passwords differ. Type the same password twice.' });
    return false;
  }
  return true;
}

/** The sign-in form on pages that need a user: resolves once signed in. */
function signIn() {
  const form = $('sign-in');
  show(form);
  form.elements.email.focus();
  return new Promise((resolve) => {
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const body = { email: form.elements.email.value.trim(), password: form.elements.password.value };
      const code = form.elements.totp_code.value.trim();
      if (code) body.totp_code = code;
      const pair = await submitting(form, async () => {
        try {
          return await api('POST', '/auth/login', body, { anonymous: true });
        } catch (error) {
          // The account has MFA on: ask for the code and let the user send again.
          if (error.code === 'mfa_required') {
            show($('totp-field'));
            form.elements.totp_code.focus();
          }
          throw error;
        }
      });
      if (!pair) return;
      storeSession(pair);
      form.reset();
      show(form, false);
      resolve();
    });
  });
}

/** The signed-in caller's profile, after the sign-in form if nobody is; undefined when a problem was shown instead. */
async function signedInProfile() {
  const profile = await currentProfile().catch((error) => showProblem(error));
  if (profile !== null) return profile ?? undefined;
  await signIn();
  return (await currentProfile().catch((error) => showProblem(error))) ?? undefined;
}

function showProfile(profile) {
  const card = $('signed-in');
  const values = {
    name: profile.name ?? '(no name)',
    email: profile.email ?? `API key ${profile.api_key?.name ?? ''}`,
    role: profile.role,
    company: profile.company?.name ?? '',
  };
  for (const [field, value] of Object.entries(values)) card.querySelector(`[data-field="${field}"]`).textContent = value;
  show(card);
}

const pages = {
  async ''() {
    if (params.has('welcome')) showDone('Welcome to Atrium: your account is ready.');
    const profile = await signedInProfile();
    if (!profile) return;
    showProfile(profile);
    $('sign-out').addEventListener('click', async () => {
      const done = await submitting($('signed-in'), async () => {
        await signOut();
        return true;
      });
      if (!done) return;
      show($('signed-in'), false);
      showDone('You are signed out.', ['/app', 'Sign in again']);
    });
  },

  'accept-invitation'() {
    const form = $('accept-invitation');
    if (!needsParameter(form)) return;
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (!passwordsMatch(form)) return;
      const name = form.elements.name.value.trim();
      const pair = await submitting(form, () =>
        api('POST', '/invitations/accept', { token: params.get('token'), password: form.elements.password.value, ...(name ? { name } : {}) }, { anonymous: true }),
      );
      if (!pair) return;
      storeSession(pair);
      location.assign('/app?welcome=1');
    });
  },

  'reset-password'() {
    if (!params.get('token')) {
      const request = $('request-reset');
      show(request);
      request.addEventListener('submit', async (event) => {
        event.preventDefault();
        const answer = await submitting(request, () => api('POST', '/auth/password-reset/request', { email: request.elements.email.value.trim() }, { anonymous: true }));
        if (answer === undefined) return;
        showDone(answer?.message ?? 'If the address has an account, a link is on its way. It works once, for a limited time.');
      });
      return;
    }
    const form = $('reset-password');
    show(form);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (!passwordsMatch(form)) return;
      const answer = await submitting(form, () =>
        api('POST', '/auth/password-reset/confirm', { token: params.get('token'), new_password: form.elements.password.value }, { anonymous: true }),
      );
      if (answer === undefined) return;
      forgetQuery();
      show(form, false);
      showDone('Your password is changed, and every session of your account has ended.', ['/app', 'Sign in with the new password']);
    });
  },

  'confirm-email'() {
    const form = $('confirm-email');
    if (!needsParameter(form)) return;
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const answer = await submitting(form, () => api('POST', '/me/email/confirm', { token: params.get('token') }, { anonymous: true }));
      if (answer === undefined) return;
      forgetQuery();
      show(form, false);
      showDone("Your account's email is now the address this link was sent to.", ['/app', 'Go to your account']);
    });
  },

  async 'cancel-deletion'() {
    const profile = await signedInProfile();
    if (!profile) return;
    const form = $('cancel-deletion');
    $('deletion-when').textContent = profile.deletion_scheduled_for
      ? `Your account is scheduled for deletion on ${new Date(profile.deletion_scheduled_for).toLocaleString()}.`
      : 'No deletion is scheduled for your account.';
    show(form);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const answer = await submitting(form, () => api('DELETE', '/me/deletion'));
      if (answer === undefined) return;
      show(form, false);
      showDone('The deletion is cancelled: your account stays.', ['/app', 'Go to your account']);
    });
  },

  async billing() {
    const outcome = { success: 'paid', cancelled: 'cancelled' };
    const topup = outcome[params.get('topup')];
    const subscription = outcome[params.get('subscription')];
    if (topup === 'paid') showDone('Thank you: the top-up is paid. Its credits arrive as soon as the payment processor confirms the payment, usually within seconds.');
    if (topup === 'cancelled') showDone('The top-up was cancelled; nothing was charged.');
    if (subscription === 'paid') showDone('Thank you: the plan is paid. It takes effect as soon as the payment processor confirms the payment.');
    if (subscription === 'cancelled') showDone('The plan change was cancelled; nothing was charged.');
    const profile = await signedInProfile();
    if (!profile) return;
    const credits = await api('GET', '/billing/credits').catch((error) => showProblem(error));
    if (!credits) return;
    const card = $('balance');
    const values = {
      available: credits.available.toLocaleString(),
      plan: credits.plan?.name ?? '',
      monthly: credits.monthly.toLocaleString(),
      purchased: credits.purchased.toLocaleString(),
      granted: credits.granted.toLocaleString(),
      held: credits.held.toLocaleString(),
      period_end: credits.period_end ? new Date(credits.period_end).toLocaleDateString() : 'not scheduled',
    };
    for (const [field, value] of Object.entries(values)) card.querySelector(`[data-field="${field}"]`).textContent = value;
    show(card);
  },

  mfa() {
    const form = $('sso-mfa');
    if (!needsParameter(form)) return;
    form.elements.totp_code.focus();
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const answer = await submitting(form, () =>
        api(
          'POST',
          '/auth/sso/mfa',
          { challenge: params.get('challenge'), totp_code: form.elements.totp_code.value.trim() },
          // Answered under the prefix the sign-in came in on (the binding cookie's path), which the callback names.
          { anonymous: true, prefix: params.get('api') === '/api/v1' ? '/api/v1' : '/v1' },
        ),
      );
      if (!answer) return;
      // The API set the session cookie; it names where the sign-in wanted to go.
      location.assign(answer.redirect_to || '/app');
    });
  },
};

Promise.resolve()
  .then(() => pages[page]?.())
  .catch((error) => showProblem(error));

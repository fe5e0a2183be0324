// The browser side of Atrium's own pages: one way to call the public REST API,
// keep a signed-in session, and show the problems (RFC 9457) the API answers.

const SESSION_KEY = 'atrium.session';

/**
 * A password sign-in answers a token pair; it lives in sessionStorage (this
 * tab, until it closes). A single sign-on sets the httpOnly service_token
 * cookie instead, which the browser sends by itself.
 */
export function storedSession() {
  try {
    const session = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null');
    return session && typeof session.access_token === 'string' ? session : null;
  } catch {
    return null;
  }
}

export function storeSession(pair) {
  sessionStorage.setItem(SESSION_KEY, JSON.stringify({ access_token: pair.access_token, refresh_token: pair.refresh_token }));
}

export function forgetSession() {
  sessionStorage.removeItem(SESSION_KEY);
}

export class ApiProblem extends Error {
  constructor(status, body, retryAfter) {
    super(body?.detail || body?.title || `HTTP ${status}`);
    this.status = status;
    this.body = body ?? {};
    this.retryAfter = retryAfter;
  }

  get code() {
    return this.body.code;
  }
}

async function send(method, path, body, token, prefix) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(`${prefix}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiProblem(0, { title: 'Atrium cannot be reached', detail: 'The request did not reach the server. Check the connection and try again.' });
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    throw new ApiProblem(response.status, data ?? { title: response.statusText || `HTTP ${response.status}`, detail: text.slice(0, 300) }, response.headers.get('retry-after'));
  }
  return data;
}

/**
 * Calls {prefix}{path} (/v1 unless told) as the stored session (Authorization
 * header) or, without one, with the browser's cookie. An access token that
 * expired is refreshed once with the stored refresh token.
 */
export async function api(method, path, body, { anonymous = false, prefix = '/v1' } = {}) {
  const session = anonymous ? null : storedSession();
  try {
    return await send(method, path, body, session?.access_token, prefix);
  } catch (error) {
    if (!(error instanceof ApiProblem) || error.status !== 401 || !session?.refresh_token) throw error;
    let pair;
    try {
      pair = await send('POST', '/auth/refresh', { refresh_token: session.refresh_token }, undefined, prefix);
    } catch {
      forgetSession();
      throw error;
    }
    storeSession(pair);
    return send(method, path, body, pair.access_token, prefix);
  }
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

export function clearMessages() {
  for (const id of ['problem', 'done']) {
    const box = document.getElementById(id);
    if (box) {
      box.hidden = true;
      box.replaceChildren();
    }
  }
  for (const input of document.querySelectorAll('[aria-invalid]')) input.removeAttribute('aria-invalid');
}

/** Shows a problem whole: its title, detail, each invalid field, the code with its documentation link, and the request id. */
export function showProblem(error, form) {
  const box = document.getElementById('problem');
  const body = error instanceof ApiProblem ? error.body : { title: 'Something went wrong', detail: String(error?.message ?? error) };
  box.replaceChildren(element('p', body.title || 'Something went wrong', 'title'));
  if (body.detail && body.detail !== body.title) box.append(element('p', body.detail));
  if (Array.isArray(body.errors) && body.errors.length) {
    const list = element('ul');
    for (const issue of body.errors) {
      const loc = Array.isArray(issue.loc) ? issue.loc.filter((part) => part !== 'body') : [];
      list.append(element('li', loc.length ? `${loc.join('.')}: ${issue.msg}` : String(issue.msg ?? issue.message ?? '')));
      const name = loc[loc.length - 1];
      const input = form && typeof name === 'string' ? form.querySelector(`[name="${CSS.escape(name)}"]`) : null;
      if (input) input.setAttribute('aria-invalid', 'true');
    }
    box.append(list);
  }
  if (error instanceof ApiProblem && error.retryAfter) box.append(element('p', `Try again in ${error.retryAfter} seconds.`));
  if (body.code) {
    const meta = element('p', undefined, 'meta');
    const link = element('a', body.code);
    link.href = typeof body.type === 'string' && body.type.startsWith(location.origin) ? body.type : `/docs/errors/${encodeURIComponent(body.code)}`;
    meta.append('Error ', link, body.request_id ? ` · request ${body.request_id}` : '');
    box.append(meta);
  }
  box.hidden = false;
  box.focus();
}

/** Shows what went well; `link` is an optional [href, text] to go on. */
export function showDone(text, link) {
  const box = document.getElementById('done');
  box.replaceChildren(element('p', text));
  if (link) {
    const a = element('a', link[1]);
    a.href = link[0];
    box.append(' ', a);
  }
  box.hidden = false;
  box.focus();
}

/** Runs `work` with the form's button disabled, showing any problem it throws. */
export async function submitting(form, work) {
  clearMessages();
  const buttons = form.querySelectorAll('button');
  for (const button of buttons) button.disabled = true;
  form.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } catch (error) {
    showProblem(error, form);
    return undefined;
  } finally {
    for (const button of buttons) button.disabled = false;
    form.removeAttribute('aria-busy');
  }
}

/** The signed-in caller's profile, or null when nobody is signed in. */
export async function currentProfile() {
  try {
    return await api('GET', '/me/profile');
  } catch (error) {
    if (error instanceof ApiProblem && error.status === 401) {
      forgetSession();
      return null;
    }
    throw error;
  }
}

/** Signs out the stored session or the cookie's (the API clears the cookie) and forgets the tokens. */
export async function signOut() {
  try {
    await api('POST', '/auth/logout');
  } finally {
    forgetSession();
  }
}

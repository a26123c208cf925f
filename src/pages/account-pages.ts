import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { maskedKey } from '../access/api-keys.js';
import { CAPABILITY_LABELS, CapabilitySchema, ROLE_CEILING, type Capability } from '../access/capabilities.js';
import { decoyPasswordHash, passwordMatches } from '../access/passwords.js';
import type { UserRow } from '../access/principal.js';
import type { PagesDeps } from './deps.js';
import { rateLimited } from '../http/rate-limit.js';
import { mintKeyForUser } from '../domain/admin.js';
import { sql } from '../store/sql.js';
import { AppError, notFound, validationError } from '../kit/errors.js';
import { html, page, type Html } from '../kit/html.js';
import type { Sessions } from './session.js';

/** Only a path inside the application may be returned to after sign-in: never another site. */
/**
 * Where to go after signing in: a path of our own pages only, and only URL characters (RFC 3986), so
 * neither another host (`//evil`, `/\\evil`) nor a header break (CR, LF) reaches the Location header.
 */
export function safeReturnPath(value: unknown): string {
  return typeof value === 'string' && /^\/app\/[A-Za-z0-9\-._~!$&'()*+,;=:@%?#][A-Za-z0-9\-._~!$&'()*+,;=:@%/?#]*$/.test(value)
    ? value
    : '/app/developers/api-keys';
}

/** A form field that may repeat (checkboxes) as a list. */
export function formList(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return typeof value === 'string' ? [value] : [];
}

const SignInForm = z.object({ email: z.string().trim().min(1), password: z.string().min(1), return: z.string().optional() });

/** The services a page uses (migration pages are given more) and the sign-in sessions. */
export interface PageContext<C extends PagesDeps = PagesDeps> {
  core: C;
  sessions: Sessions;
}

/** The signed-in user, or a redirect to sign-in that comes back here. */
export async function requireUser(ctx: PageContext, request: FastifyRequest, reply: FastifyReply): Promise<UserRow | undefined> {
  const user = await ctx.sessions.currentUser(request);
  if (!user) void reply.redirect(`/app/sign-in?return=${encodeURIComponent(request.url)}`, 303);
  return user;
}

export function sendPage(reply: FastifyReply, title: string, body: Html, user?: UserRow, csrfToken?: string, status = 200) {
  return reply.status(status).type('text/html; charset=utf-8').send(page({ title, body, user, csrfToken }));
}

function signInForm(csrfToken: string, returnTo: string, error?: string): Html {
  return html`${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form class="card" method="post" action="/app/sign-in">
<input type="hidden" name="_csrf" value="${csrfToken}"><input type="hidden" name="return" value="${returnTo}">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<p><button type="submit">Sign in</button></p></form>`;
}

/**
 * Sign-in tries per minute. Per account it is what slows a guesser down across any number of
 * addresses, with room for a person (or a test suite) signing in again and again; per address it
 * caps one source trying many accounts.
 */
export const SIGN_IN_LIMITS = { perEmail: 20, perIp: 30, windowSeconds: 60 } as const;

/** The email a sign-in form tries, as the account is looked up (case-insensitively). */
function triedEmail(body: unknown): string | undefined {
  const email = (body as Record<string, unknown> | undefined)?.email;
  return typeof email === 'string' ? email.trim().toLowerCase() : undefined;
}

/** An address the account signed in from is known to it this long (since its last sign-in there). */
const KNOWN_ADDRESS_SECONDS = 30 * 24 * 60 * 60;

export function registerAccountPages(app: FastifyInstance, ctx: PageContext): void {
  const { core, sessions } = ctx;
  // Password guessing: per address, and per account however many addresses try it. The account's own
  // known addresses are exempt from the account-wide limit, so a third party guessing cannot lock its
  // owner out; they keep the per-address limit.
  const { perEmail, perIp, windowSeconds } = SIGN_IN_LIMITS;
  const perAddress = rateLimited(core, { name: 'sign_in', limit: perIp, windowSeconds, key: (request) => ({ ip: request.ip }) });
  const perAccount = rateLimited(core, { name: 'sign_in', limit: perEmail, windowSeconds, key: (request) => ({ email: triedEmail(request.body) }) });
  const knownAddressKey = (email: string, ip: string) =>
    `sign-in:known:${createHmac('sha256', core.secretKey).update(`${email}\0${ip}`).digest('base64url').slice(0, 32)}`;
  const signInLimits = [
    perAddress,
    async (request: FastifyRequest, reply: FastifyReply) => {
      const email = triedEmail(request.body);
      // Redis down: the exemption is unknown, so the account-wide limit applies (it falls back to this process).
      const known = email !== undefined && (await core.shared.get(knownAddressKey(email, request.ip)).catch(() => undefined)) !== undefined;
      if (!known) await perAccount(request, reply);
    },
  ];

  app.get('/app', async (_request, reply) => reply.redirect('/app/developers/api-keys', 303));

  app.get('/app/sign-in', async (request, reply) => {
    const returnTo = safeReturnPath((request.query as Record<string, unknown>).return);
    return sendPage(reply, 'Sign in', signInForm(sessions.csrfToken(request, reply), returnTo));
  });

  app.post('/app/sign-in', async (request, reply) => {
    sessions.checkCsrf(request);
    const form = SignInForm.safeParse(request.body);
    const returnTo = safeReturnPath(form.success ? form.data.return : undefined);
    try {
      for (const limit of signInLimits) await limit(request, reply);
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 429) throw error;
      // The form again, with Retry-After set: the user reads when to try again where they typed.
      const wait = `Too many sign-in attempts. Wait ${String(reply.getHeader('retry-after'))} seconds, then try again.`;
      return sendPage(reply, 'Sign in', signInForm(sessions.csrfToken(request, reply), returnTo, wait), undefined, undefined, 429);
    }
    const user = form.success ? await verifyPassword(core, form.data.email, form.data.password) : undefined;
    if (!user) {
      const body = signInForm(sessions.csrfToken(request, reply), returnTo, 'Wrong email or password, or the account is disabled.');
      return sendPage(reply, 'Sign in', body, undefined, undefined, 401);
    }
    await sessions.signIn(reply, user.id);
    await core.shared.set(knownAddressKey(triedEmail(request.body)!, request.ip), '1', KNOWN_ADDRESS_SECONDS).catch((error: unknown) => {
      request.log.warn({ err: error }, 'could not remember the sign-in address');
    });
    return reply.redirect(returnTo, 303);
  });

  app.post('/app/sign-out', async (request, reply) => {
    sessions.checkCsrf(request);
    await sessions.signOut(request, reply);
    return reply.redirect('/app/sign-in', 303);
  });

  app.get('/app/developers/api-keys', async (request, reply) => {
    const user = await requireUser(ctx, request, reply);
    if (!user) return reply;
    return sendPage(reply, 'API Keys', await keysBody(ctx, user, sessions.csrfToken(request, reply)), user, sessions.csrfToken(request, reply));
  });

  app.post('/app/developers/api-keys', async (request, reply) => {
    const user = await requireUser(ctx, request, reply);
    if (!user) return reply;
    sessions.checkCsrf(request);
    const body = request.body as Record<string, unknown>;
    const parsed = z.array(CapabilitySchema).safeParse(formList(body.capabilities));
    if (!parsed.success) throw validationError(parsed.error, 'capabilities');
    const capabilities = parsed.data;
    const name = typeof body.name === 'string' && body.name.trim() ? body.name.trim().slice(0, 100) : 'API key';
    const minted = await mintKeyForUser(core.db, user.email, capabilities, name);
    const csrfToken = sessions.csrfToken(request, reply);
    const shown = html`<section aria-labelledby="new-key"><h2 id="new-key">New key “${name}”</h2>
<p class="notice">Copy this key now. It is shown only once; the service keeps only a hash of it.</p>
<p class="secret" data-testid="raw-key">${minted.rawKey}</p></section>`;
    return sendPage(reply, 'API Keys', html`${shown}${await keysBody(ctx, user, csrfToken)}`, user, csrfToken, 201);
  });

  app.post('/app/developers/api-keys/:keyId/revoke', async (request, reply) => {
    const user = await requireUser(ctx, request, reply);
    if (!user) return reply;
    sessions.checkCsrf(request);
    const { keyId } = request.params as { keyId: string };
    const rows = await core.db.query(sql`UPDATE api_keys SET revoked_at = now()
      WHERE id = ${keyId} AND user_id = ${user.id} AND revoked_at IS NULL RETURNING id`);
    if (rows.length === 0) throw notFound('Active API key', keyId);
    return reply.redirect('/app/developers/api-keys', 303);
  });
}

async function verifyPassword(core: PagesDeps, email: string, password: string): Promise<{ id: string } | undefined> {
  const [row] = await core.db.query<{ id: string; password_hash: string | null; disabled_at: string | null }>(
    sql`SELECT id, password_hash, disabled_at FROM users WHERE lower(email) = lower(${email})`,
  );
  // An unknown email or a user without a password costs the same scrypt as a wrong password.
  const matches = await passwordMatches(password, row?.password_hash ?? (await decoyPasswordHash()));
  return row && row.password_hash && matches && !row.disabled_at ? { id: row.id } : undefined;
}

async function keysBody(ctx: PageContext, user: UserRow, csrfToken: string): Promise<Html> {
  const keys = await ctx.core.db.query<{ id: string; name: string; capabilities: Capability[]; created_at: string; last_used_at: string | null }>(sql`
    SELECT id, name, capabilities, created_at, last_used_at FROM api_keys
    WHERE user_id = ${user.id} AND revoked_at IS NULL ORDER BY created_at DESC, id`);
  const rows = keys.map(
    (key) => html`<tr><td>${key.name}<br><code>${maskedKey(key.id)}</code></td>
<td>${key.capabilities.map((c) => html`<code>${c}</code> `)}</td><td>${key.created_at.slice(0, 16).replace('T', ' ')}</td>
<td>${key.last_used_at ? key.last_used_at.slice(0, 16).replace('T', ' ') : 'never'}</td>
<td><form method="post" action="/app/developers/api-keys/${key.id}/revoke"><input type="hidden" name="_csrf" value="${csrfToken}">
<button type="submit" aria-label="Revoke ${key.name}">Revoke</button></form></td></tr>`,
  );
  const choices = ROLE_CEILING[user.role].map(
    (c) => html`<label><input type="checkbox" name="capabilities" value="${c}"> ${CAPABILITY_LABELS[c]} <code>${c}</code></label>`,
  );
  return html`<section aria-labelledby="keys"><h2 id="keys">Your keys</h2>
${keys.length === 0 ? html`<p>No active keys.</p>` : html`<table><thead><tr><th>Key</th><th>Capabilities</th><th>Created (UTC)</th><th>Last use</th><th></th></tr></thead><tbody>${rows}</tbody></table>`}
</section>
<form class="card" method="post" action="/app/developers/api-keys" aria-labelledby="mint"><h2 id="mint">Mint a key</h2>
<p>The key acts as you (${user.email}), narrowed to the capabilities you choose and, live, to your role. For integrations, prefer a dedicated non-personal user.</p>
<input type="hidden" name="_csrf" value="${csrfToken}">
<label for="key-name">Name</label><input id="key-name" name="name" type="text" maxlength="100" required>
<fieldset><legend>Capabilities</legend>${choices}</fieldset>
<p><button type="submit">Mint key</button></p></form>`;
}

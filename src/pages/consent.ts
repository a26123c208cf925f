import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { InteractionDetails, InteractionResult, Provider } from 'oidc-provider';
import { ROLE_CEILING } from '../access/capabilities.js';
import type { UserRow } from '../access/principal.js';
import { AppError, badRequest } from '../kit/errors.js';
import { forgetDeclined, isMetadataDocumentClient, type OAuthAddress } from '../oauth/provider.js';
import { describePermission, isOAuthScope, type OAuthScope } from '../oauth/scopes.js';
import { formList, requireUser, sendPage, type PageContext } from './account-pages.js';
import { redirectHost } from './connections.js';
import { html, type Html } from '../kit/html.js';

/** Scopes that are not permissions (OpenID plumbing: VS Code sends `openid profile email`); passed over silently. */
const PROTOCOL_SCOPES = new Set(['openid', 'offline_access', 'profile', 'email']);

interface ConsentRequest {
  details: InteractionDetails;
  clientName: string;
  /** The host of a client identified by its metadata document's URL (CIMD); undefined for a registered one. */
  publisherHost: string | undefined;
  redirectUri: string;
  /** Requested, grantable over OAuth and within the user's role. */
  grantable: OAuthScope[];
  /** Requested OAuth scopes the user's role does not reach. */
  beyondRole: OAuthScope[];
  /** Requested scopes OAuth never grants (the five-scope ceiling) or that do not exist. */
  refused: string[];
}

/** The authorization server the browser reached: the one its sign-in request was made to, at the same address. */
function addressOf(ctx: PageContext, request: FastifyRequest): OAuthAddress {
  return ctx.core.oauth.at(request.headers.host);
}

async function loadInteraction(ctx: PageContext, request: FastifyRequest, reply: FastifyReply): Promise<InteractionDetails> {
  try {
    const provider = await addressOf(ctx, request).provider();
    const details = await provider.interactionDetails(request.raw, reply.raw);
    if (details.uid !== (request.params as { uid: string }).uid) throw new Error('interaction mismatch');
    return details;
  } catch {
    throw new AppError(400, 'interaction_expired', 'This sign-in request expired or belongs to another browser; start again from your app');
  }
}

async function consentRequest(provider: Provider, details: InteractionDetails, user: UserRow): Promise<ConsentRequest> {
  const client = await provider.Client.find(details.params.client_id);
  const requested = [...new Set((details.params.scope ?? '').split(' ').filter(Boolean))];
  const ceiling = new Set<string>(ROLE_CEILING[user.role]);
  const oauthScopes = requested.filter(isOAuthScope);
  return {
    details,
    clientName: client?.clientName ?? (client?.metadata().client_name as string | undefined) ?? 'An unnamed application',
    publisherHost: isMetadataDocumentClient(details.params.client_id) ? new URL(details.params.client_id).host : undefined,
    redirectUri: details.params.redirect_uri ?? client?.redirectUris[0] ?? '',
    grantable: oauthScopes.filter((s) => ceiling.has(s)),
    beyondRole: oauthScopes.filter((s) => !ceiling.has(s)),
    refused: requested.filter((s) => !isOAuthScope(s) && !PROTOCOL_SCOPES.has(s)),
  };
}

function consentBody(consent: ConsentRequest, user: UserRow, csrfToken: string): Html {
  const host = redirectHost(consent.redirectUri);
  const permissions = consent.grantable.map((scope) => {
    const { label, readOnly, tools } = describePermission(scope);
    // Checked as asked (within the role): a client stepping up asked for the write it needs; the user may uncheck.
    return html`<li><label><input type="checkbox" name="scopes" value="${scope}" checked>
<strong>${label}</strong> <code>${scope}</code>${readOnly ? '' : html` <em>(changes data)</em>`}</label>
<span class="tools">Unlocks: ${tools.join(', ')}</span></li>`;
  });
  const publisher = consent.publisherHost;
  // The domain is the one checked fact about a CIMD client; its name is whatever its document says.
  const identity = publisher
    ? html`<div class="notice" role="note"><strong>Published by <span data-testid="client-host">${publisher}</span>.</strong> This application is identified by a document on ${publisher}; its name, "${consent.clientName}", is what that document says. Allow it only if you trust ${publisher} and started this connection yourself.</div>`
    : html`<div class="notice" role="note"><strong>Unverified application.</strong> This application registered itself; the service has not verified who publishes it. Allow it only if you trust it and started this connection yourself.</div>`;
  return html`<p><strong>${publisher ?? consent.clientName}</strong>${publisher ? html` (calls itself “${consent.clientName}”)` : ''} wants to use the Device Lifecycle Service as <strong>${user.email}</strong>.</p>
${identity}
<div class="notice" role="note"><strong>Where your data goes.</strong> Data this application reads with the permissions below is sent to <strong data-testid="redirect-host">${host}</strong> and to whatever services it uses.</div>
<form class="card" method="post" action="/app/interaction/${consent.details.uid}">
<input type="hidden" name="_csrf" value="${csrfToken}">
<fieldset><legend>Permissions (read and write are granted separately)</legend>
<ul>${permissions}</ul></fieldset>
${consent.beyondRole.length ? html`<p>Not available to your role: ${consent.beyondRole.join(', ')}.</p>` : ''}
${consent.refused.length ? html`<p>Cannot be granted to applications over OAuth: ${consent.refused.join(', ')}. Use an API key for those.</p>` : ''}
<p><button type="submit" name="decision" value="allow">Allow selected</button>
<button type="submit" name="decision" value="deny">Deny</button></p></form>`;
}

export async function registerConsentPages(app: FastifyInstance, ctx: PageContext): Promise<void> {
  const { sessions } = ctx;

  const finish = async (request: FastifyRequest, reply: FastifyReply, result: InteractionResult) => {
    const provider = await addressOf(ctx, request).provider();
    const returnTo = await provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: true });
    return reply.redirect(returnTo, 303);
  };

  app.get('/app/interaction/:uid', async (request, reply) => {
    const details = await loadInteraction(ctx, request, reply);
    const user = await requireUser(ctx, request, reply);
    if (!user) return reply;
    // Signing in to the pages is the login step of the authorization.
    if (details.prompt.name === 'login') return finish(request, reply, { login: { accountId: user.id } });
    if (details.session?.accountId !== user.id) {
      throw new AppError(409, 'different_user', 'This authorization started under another user; sign out and start again from your app');
    }
    const consent = await consentRequest(await addressOf(ctx, request).provider(), details, user);
    // A page with nothing to approve is a dead end: the client hears why instead (RFC 6749 §4.1.2.1).
    if (consent.grantable.length === 0) {
      const asked = [...consent.beyondRole, ...consent.refused].join(', ') || 'none named';
      return finish(request, reply, {
        error: 'invalid_scope',
        error_description: `No requested permission (${asked}) can be granted by ${user.email}, role ${user.role}`,
      });
    }
    const csrfToken = sessions.csrfToken(request, reply);
    return sendPage(reply, 'Allow access?', consentBody(consent, user, csrfToken), user, csrfToken);
  });

  app.post('/app/interaction/:uid', async (request, reply) => {
    sessions.checkCsrf(request);
    const details = await loadInteraction(ctx, request, reply);
    const user = await sessions.currentUser(request);
    if (!user || details.session?.accountId !== user.id) {
      throw new AppError(401, 'not_signed_in', 'Sign in again, then approve the request');
    }
    const form = request.body as Record<string, unknown>;
    if (form.decision !== 'allow') {
      return finish(request, reply, { error: 'access_denied', error_description: 'The user denied the request' });
    }
    const { resource, provider: loadProvider } = addressOf(ctx, request);
    const provider = await loadProvider();
    const consent = await consentRequest(provider, details, user);
    const chosen = formList(form.scopes).filter((s): s is OAuthScope => (consent.grantable as string[]).includes(s));
    if (chosen.length === 0) throw badRequest('no_permissions', 'Choose at least one permission, or deny the request');
    const grant = details.grantId
      ? ((await provider.Grant.find(details.grantId)) ?? new provider.Grant({ accountId: user.id, clientId: details.params.client_id }))
      : new provider.Grant({ accountId: user.id, clientId: details.params.client_id });
    const promptDetails = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
    if (promptDetails.missingOIDCScope) grant.addOIDCScope(promptDetails.missingOIDCScope.join(' '));
    if (promptDetails.missingOIDCClaims) grant.addOIDCClaims(promptDetails.missingOIDCClaims);
    forgetDeclined(grant, resource, chosen);
    grant.addResourceScope(resource, chosen.join(' '));
    // Unchosen scopes are rejected, not missing, so the provider does not ask again in this authorization.
    const rejected = (details.params.scope ?? '').split(' ').filter((s) => s && !PROTOCOL_SCOPES.has(s) && !(chosen as string[]).includes(s));
    if (rejected.length > 0) grant.rejectResourceScope(resource, rejected.join(' '));
    const grantId = await grant.save();
    return finish(request, reply, { consent: { grantId } });
  });
}

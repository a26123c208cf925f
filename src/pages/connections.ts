import type { FastifyInstance } from 'fastify';
import type { PagesDeps } from './deps.js';
import { sql } from '../store/sql.js';
import { badRequest, notFound } from '../kit/errors.js';
import { destroyGrant, findRecord, recordKey } from '../oauth/adapter.js';
import { isMetadataDocumentClient } from '../oauth/provider.js';
import { describePermission, oauthScopesIn, type OAuthScope } from '../oauth/scopes.js';
import { formList, requireUser, sendPage, type PageContext } from './account-pages.js';
import { html, type Html } from '../kit/html.js';

interface GrantPayload {
  jti: string;
  accountId: string;
  clientId: string;
  resources?: Record<string, string>;
}

interface ClientPayload {
  client_name?: string;
  redirect_uris?: string[];
}

export interface Connection {
  grantId: string;
  clientId: string;
  clientName: string;
  redirectHosts: string[];
  scopes: OAuthScope[];
  expiresAt: string | null;
}

/** Where an app's redirect sends the browser: the host, or the scheme of a native app. */
export function redirectHost(uri: string): string {
  const url = URL.parse(uri);
  if (!url) return uri;
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.host : `${url.protocol}//`;
}

/**
 * A registered client from our table; a metadata-document client (CIMD) from its document, fetched or
 * cached by oidc-provider, or by its host when the document cannot be had now.
 */
async function clientOf(core: PagesDeps, clientId: string): Promise<ClientPayload | undefined> {
  if (!isMetadataDocumentClient(clientId)) return findRecord<ClientPayload>(core.db, 'Client', clientId);
  const client = await (await core.oauth.provider()).Client.find(clientId).catch(() => undefined);
  return client ? (client.metadata() as ClientPayload) : { client_name: new URL(clientId).host, redirect_uris: [] };
}

/** The scopes a grant gives at the service's MCP endpoint, under whichever of its addresses the client used. */
function grantedResource(core: PagesDeps, resources: Record<string, string> | undefined): { resource: string; scopes: OAuthScope[] } | undefined {
  const resource = core.oauth.resources.find((candidate) => resources?.[candidate] !== undefined);
  return resource === undefined ? undefined : { resource, scopes: oauthScopesIn(resources?.[resource]) };
}

export async function listConnections(core: PagesDeps, userId: string): Promise<Connection[]> {
  const grants = await core.db.query<{ payload: GrantPayload; expires_at: string | null }>(sql`
    SELECT payload, expires_at FROM oauth_records
    WHERE kind = 'Grant' AND account_id = ${userId} AND (expires_at IS NULL OR expires_at > now())
    ORDER BY expires_at DESC`);
  return Promise.all(
    grants.map(async ({ payload, expires_at }) => {
      const client = await clientOf(core, payload.clientId);
      return {
        grantId: payload.jti,
        clientId: payload.clientId,
        clientName: client?.client_name ?? 'Unnamed client',
        redirectHosts: [...new Set((client?.redirect_uris ?? []).map(redirectHost))],
        scopes: grantedResource(core, payload.resources)?.scopes ?? [],
        expiresAt: expires_at,
      };
    }),
  );
}

async function ownGrant(core: PagesDeps, userId: string, grantId: string): Promise<GrantPayload> {
  const grant = await findRecord<GrantPayload>(core.db, 'Grant', grantId);
  if (!grant || grant.accountId !== userId) throw notFound('Connection', grantId);
  return grant;
}

function connectionsBody(connections: Connection[], csrfToken: string): Html {
  if (connections.length === 0) return html`<p>No MCP client is connected. Connect one by adding this service's <code>/mcp</code> address to it.</p>`;
  return html`${connections.map(
    (c) => html`<section aria-label="${c.clientName}"><h2>${c.clientName}</h2>
<p>Client <code>${c.clientId}</code> · sends data to ${c.redirectHosts.join(', ')} · expires ${c.expiresAt ? c.expiresAt.slice(0, 16).replace('T', ' ') + ' UTC' : 'never'}</p>
<form method="post" action="/app/connections/${c.grantId}"><input type="hidden" name="_csrf" value="${csrfToken}">
<fieldset><legend>Permissions (uncheck to narrow)</legend>${c.scopes.map((scope) => {
      const { label, tools } = describePermission(scope);
      return html`<label><input type="checkbox" name="scopes" value="${scope}" checked> ${label} <code>${scope}</code>
<span class="tools">— ${tools.join(', ')}</span></label>`;
    })}</fieldset><p><button type="submit">Save permissions</button></p></form>
<form method="post" action="/app/connections/${c.grantId}/disconnect"><input type="hidden" name="_csrf" value="${csrfToken}">
<button type="submit">Disconnect ${c.clientName}</button></form></section>`,
  )}`;
}

export function registerConnectionPages(app: FastifyInstance, ctx: PageContext): void {
  const { core, sessions } = ctx;

  app.get('/app/connections', async (request, reply) => {
    const user = await requireUser(ctx, request, reply);
    if (!user) return reply;
    const csrfToken = sessions.csrfToken(request, reply);
    return sendPage(reply, 'MCP Connectors', connectionsBody(await listConnections(core, user.id), csrfToken), user, csrfToken);
  });

  // Narrowing only: a connection never gains a permission here the user did not consent to.
  app.post('/app/connections/:grantId', async (request, reply) => {
    const user = await requireUser(ctx, request, reply);
    if (!user) return reply;
    sessions.checkCsrf(request);
    const { grantId } = request.params as { grantId: string };
    const grant = await ownGrant(core, user.id, grantId);
    const granted = grantedResource(core, grant.resources);
    const current = new Set(granted?.scopes);
    const chosen = formList((request.body as Record<string, unknown>).scopes);
    const widened = chosen.filter((scope) => !current.has(scope as OAuthScope));
    if (widened.length > 0) {
      throw badRequest('cannot_widen', `A connection can only be narrowed here; authorize the client again to add ${widened.join(', ')}`);
    }
    if (chosen.length === 0 || !granted) throw badRequest('no_permissions', 'Keep at least one permission, or disconnect the client');
    await core.db.query(sql`UPDATE oauth_records
      SET payload = jsonb_set(payload, ARRAY['resources', ${granted.resource}], to_jsonb(${chosen.join(' ')}::text))
      WHERE kind = 'Grant' AND id_hash = ${recordKey(grantId)}`);
    return reply.redirect('/app/connections', 303);
  });

  app.post('/app/connections/:grantId/disconnect', async (request, reply) => {
    const user = await requireUser(ctx, request, reply);
    if (!user) return reply;
    sessions.checkCsrf(request);
    const { grantId } = request.params as { grantId: string };
    await ownGrant(core, user.id, grantId);
    await destroyGrant(core.db, grantId);
    return reply.redirect('/app/connections', 303);
  });
}

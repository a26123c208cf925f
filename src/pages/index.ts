import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import { ZodError } from 'zod';
import type { PagesDeps } from './deps.js';
import { validationError } from '../kit/errors.js';
import { errorHandler, toAppError } from '../http/errors.js';
import { noteErrorCode } from '../http/request-log.js';
import { registerAccountPages, sendPage, type PageContext } from './account-pages.js';
import { registerConnectionPages } from './connections.js';
import { registerConsentPages } from './consent.js';
import { html, STYLE_HASH } from '../kit/html.js';
import { createSessions } from './session.js';

/**
 * The application's pages under /app: sign-in, API keys, MCP connections, the OAuth consent
 * screen and the v2 migration dashboard; and the public migration guide under /docs/migration. They never allow framing (clickjacking of the consent), send no CORS headers, and are
 * never cached.
 */
/** Pages an area above registers in the same scope (the migration's), with the same headers and errors. */
export type PageRoutes<C extends PagesDeps> = (scope: FastifyInstance, ctx: PageContext<C>) => void | Promise<void>;

export async function registerPages<C extends PagesDeps>(app: FastifyInstance, core: C, more: readonly PageRoutes<C>[] = []): Promise<void> {
  await app.register(async (scope) => {
    await scope.register(cookie);
    await scope.register(formbody);
    const ctx = { core, sessions: createSessions(core) };

    scope.addHook('onSend', async (_request, reply) => {
      void reply.headers({
        'x-frame-options': 'DENY',
        'content-security-policy': `default-src 'none'; style-src ${STYLE_HASH}; frame-ancestors 'none'; base-uri 'none'`,
        'referrer-policy': 'no-referrer',
        'x-content-type-options': 'nosniff',
        'cache-control': 'no-store',
      });
    });

    scope.setErrorHandler(
      errorHandler({
        // A form that fails its schema is the visitor's mistake, like a body the framework could not read.
        read: (error) => (error instanceof ZodError ? validationError(error) : toAppError(error)),
        failed: 'page failed',
        send: (request, reply, appError) => {
          noteErrorCode(request, appError.code);
          const body = html`<p class="error" role="alert">${appError.message}</p><p><a href="/app">Back to the application</a></p>`;
          return sendPage(reply, 'Something went wrong', body, undefined, undefined, appError.status);
        },
      }),
    );

    registerAccountPages(scope, ctx);
    registerConnectionPages(scope, ctx);
    await registerConsentPages(scope, ctx);
    for (const routes of more) await routes(scope, ctx);
  });
}

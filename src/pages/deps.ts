import type { OAuthDeps } from '../oauth/routes.js';

/** What the pages use: the HTTP frame's services and the OAuth server (consent, connections). */
export type PagesDeps = OAuthDeps;

import type { LegacyDeps } from '../legacy/legacy-keys.js';
import type { OAuthDeps } from '../oauth/routes.js';

/** What the migration tooling uses: the legacy keys' services, and the pages' (its dashboard and plans are pages). */
export type MigrationDeps = LegacyDeps & OAuthDeps;

import type { FastifyInstance } from 'fastify';
import type { Core } from './core.js';
import { baseApp } from './base-app.js';
import { inProcessV4 } from '../gateway/v4-client.js';
import { registerRestRoutes } from '../http/rest.js';
import { registerDocs } from './openapi.js';
import { registerV2Routes } from '../gateway/v2-routes.js';
import { registerCutover } from '../migration/cutover.js';
import { registerOAuthRoutes } from '../oauth/routes.js';
import { registerPages } from '../pages/index.js';
import { registerMigrationDashboard } from '../migration/pages/migration-dashboard.js';
import { registerMigrationGuide } from '../migration/pages/migration-guide.js';
import { registerMigrationPlanPage } from '../migration/pages/migration-plan.js';
import { OPERATIONS } from './operation-table.js';
import { registerMcp } from '../mcp/endpoint.js';

/** Builds the whole HTTP service on a core; never listens (the caller decides). */
export async function buildApp(core: Core): Promise<FastifyInstance> {
  const app = baseApp(core);
  registerRestRoutes(app, core, OPERATIONS);
  registerV2Routes(app, core, inProcessV4(core));
  await registerMcp(app, core);
  await registerOAuthRoutes(app, core);
  await registerPages(app, core, [registerMigrationDashboard, registerMigrationPlanPage, (scope, ctx) => registerMigrationGuide(scope, ctx.core)]);
  await registerDocs(app, core);
  registerCutover(app, core);
  return app;
}

import type { ChangeFeed } from '../store/change-feed.js';
import type { MigrationDeps } from '../migration/deps.js';
import type { GatewayMetrics } from './metrics.js';

/** What the v2 runtime uses: the migration's services (the owner plan, the shadow check) plus its own metrics and the change feed its caches follow. */
export type GatewayDeps = MigrationDeps & { metrics: { gateway: GatewayMetrics }; changes: ChangeFeed };

import type { FastifyInstance } from 'fastify';
import type { Icon } from '@modelcontextprotocol/sdk/types.js';
import type { AnyOperation } from '../operations/operation.js';
import { ICON_PNG } from './icons-png.js';

/*
 * Icons of the server and of its tools (MCP 2025-11-25 `icons`): PNG, which every client must
 * display, served by this service so that clients load them from the MCP endpoint's own origin.
 */

export type IconName = keyof typeof ICON_PNG;

const ICONS_PATH = '/icons';
const PNG: ReadonlyMap<string, Buffer> = new Map(Object.entries(ICON_PNG).map(([name, base64]) => [name, Buffer.from(base64, 'base64')]));

export function icon(baseUrl: string, name: IconName): Icon[] {
  return [{ src: `${baseUrl}${ICONS_PATH}/${name}.png`, mimeType: 'image/png', sizes: ['48x48'] }];
}

/** A tool's icon is its area's (`mcp:orders:write` → orders); whoami, which needs no capability, is identity. */
export function toolIconName(op: AnyOperation): IconName {
  const area = op.capability?.split(':')[1];
  return area !== undefined && area in ICON_PNG ? (area as IconName) : 'identity';
}

export function registerIcons(app: FastifyInstance): void {
  app.get<{ Params: { file: string } }>(`${ICONS_PATH}/:file`, async (request, reply) => {
    const png = PNG.get(request.params.file.replace(/\.png$/, ''));
    if (!png || !request.params.file.endsWith('.png')) return reply.callNotFound();
    return reply.type('image/png').header('cache-control', 'public, max-age=86400').send(png);
  });
}

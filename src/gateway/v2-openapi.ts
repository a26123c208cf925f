import { domainOperationByName } from '../operations/domain-table.js';
import { openApiPath, pathParams } from '../kit/path-template.js';
import type { Mappings, Route } from '../legacy/mappings.js';
import { buildMigrationGuide, type GuideEndpoint } from '../migration/migration-guide.js';

/*
 * The OpenAPI 3.1 document of API v2, derived from the maps like the migration guide: every
 * operation deprecated, with its sunset and its v4 successor, so the docs show both versions.
 */

/** The v2 input fields a GET reads from its query string: those its request transforms name. */
function queryFields(route: Route): string[] {
  if (route.kind !== 'v4' || route.method !== 'GET') return [];
  const named = route.request.flatMap((t) => {
    switch (t.op) {
      case 'pick':
      case 'require':
        return t.fields;
      case 'refuse':
        return [t.field];
      case 'rename':
      case 'lookup':
        return [t.from];
      default:
        return [];
    }
  });
  const inPath = pathParams(route.path);
  return [...new Set(named)].filter((field) => !inPath.includes(field));
}

function description(endpoint: GuideEndpoint, sunsetDay: string): string {
  const lines = [`**Deprecated.** v2 stops answering on ${sunsetDay} (\`x-sunset\`).`];
  if (endpoint.noSuccessor) {
    const { reason, instead } = endpoint.noSuccessor;
    lines.push(`**No v4 successor:** ${reason}. It stays on v2, forwarded to the legacy v2 service, until the sunset.${instead ? ` Instead: ${instead}.` : ''}`);
  } else {
    const calls = endpoint.successor.map((call) => `\`${call.operation}\` (\`${call.method} ${call.path}\`)`).join(', then ');
    lines.push(`**v4 successor:** ${calls}, with ${endpoint.capabilities.map((cap) => `\`${cap}\``).join(', ')}.`);
  }
  if (endpoint.changes.length > 0) lines.push(`**Changes in v4:**\n${endpoint.changes.map((change) => `- ${change.text}`).join('\n')}`);
  return lines.join('\n\n');
}

/** The OpenAPI 3.1 document of the v2 routes of these maps, served at `baseUrl`. */
export function buildV2OpenApiDocument(mappings: Mappings, baseUrl: string) {
  const guide = buildMigrationGuide(mappings);
  const { sunset, links } = mappings.sunset;
  const sunsetDay = guide.sunset.slice(0, 10);
  const guideUrl = (anchor: string) => new URL(links.migrationGuide.replaceAll('{anchor}', anchor), baseUrl).href;
  const paths: Record<string, Record<string, unknown>> = {};
  mappings.routes.forEach((route, i) => {
    const endpoint = guide.endpoints[i]!;
    const parameters = [
      ...pathParams(route.path).map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      ...queryFields(route).map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } })),
    ];
    const example = endpoint.example?.v2.body;
    // The gateway answers with the status of the route's v4 operation (201 for a creation).
    const success = route.kind === 'passthrough' ? '2XX' : String(domainOperationByName(route.operation)?.successStatus ?? 200);
    const operation = {
      operationId: endpoint.anchor,
      summary: endpoint.successor[0] ? `${endpoint.successor[0].title} (v4: ${endpoint.successor[0].operation})` : 'No v4 successor',
      description: description(endpoint, sunsetDay),
      deprecated: true,
      tags: [route.path.split('/')[1] ?? 'v2'],
      'x-v2-scope': route.scope,
      'x-sunset': sunset.toISOString(),
      'x-v4-successor': endpoint.successor.map((call) => ({ operationId: call.operation, method: call.method, path: openApiPath(call.path) })),
      ...(endpoint.noSuccessor ? { 'x-no-v4-successor': endpoint.noSuccessor.reason } : {}),
      'x-capabilities': endpoint.capabilities,
      externalDocs: { description: 'Migration guide: this endpoint in v4', url: guideUrl(endpoint.anchor) },
      parameters,
      ...(route.method === 'GET'
        ? {}
        : { requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' }, ...(example ? { example } : {}) } } } }),
      responses: {
        [success]: {
          description: route.kind === 'passthrough' ? 'The legacy v2 service’s answer, passed on unchanged' : 'The v4 answer in the v2 shape',
          headers: { Deprecation: { $ref: '#/components/headers/Deprecation' }, Sunset: { $ref: '#/components/headers/Sunset' }, Link: { $ref: '#/components/headers/Link' } },
        },
        '410': { $ref: '#/components/responses/Gone' },
        ...(route.kind === 'passthrough' ? { '501': { $ref: '#/components/responses/NoSuccessor' } } : {}),
        default: { $ref: '#/components/responses/Error' },
      },
    };
    const path = openApiPath(`${mappings.sunset.prefix}${route.path}`);
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation };
  });

  const v2Error = {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['status', 'code', 'message'],
        properties: { status: { type: 'integer' }, code: { type: 'string' }, message: { type: 'string' }, details: {} },
      },
    },
  };
  const errorResponse = (text: string) => ({ description: text, content: { 'application/json': { schema: { $ref: '#/components/schemas/V2Error' } } } });
  const brownouts = guide.brownouts.map(({ start, end }) => `${start} – ${end}`).join(', ');
  return {
    openapi: '3.1.0',
    info: {
      title: 'Device Lifecycle Service API v2 (deprecated)',
      version: '2',
      description: [
        `API v2 is deprecated since ${guide.deprecation.slice(0, 10)} and stops answering on ${sunsetDay}${brownouts ? `; it answers 410 Gone during the brownouts ${brownouts}` : ''}.`,
        'The gateway translates every call with a v4 successor into v4 calls; each operation names its successor (`x-v4-successor`) and the capabilities a v4 key needs.',
        `The [migration guide](${guideUrl('endpoints')}) shows, per endpoint, what changes and a v2 and v4 example.`,
        `\`GET ${guide.ownerPlan}\` with your v2 key answers your key's own plan: the endpoints it calls and their v4 calls, its stage and next step, the brownouts ahead, and the admins of your company who mint its successor v4 key.`,
      ].join('\n\n'),
    },
    servers: [{ url: baseUrl }],
    security: [{ legacyKey: [] }],
    paths,
    components: {
      securitySchemes: { legacyKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY', description: 'A v2 (legacy) key; v4 keys (svc_sk_…) are refused on v2' } },
      schemas: { V2Error: v2Error },
      headers: {
        Deprecation: { description: 'RFC 9745: when v2 was deprecated, as @ Unix seconds', schema: { type: 'string' } },
        Sunset: { description: 'RFC 8594: when v2 stops answering', schema: { type: 'string' } },
        Link: {
          description: `rel="successor-version": the v4 path of the call (only where one exists); rel="deprecation": its section of the migration guide; rel="help": ${guide.ownerPlan}, the key's own migration plan`,
          schema: { type: 'string' },
        },
      },
      responses: {
        Gone: errorResponse('v2_brownout (a scheduled window) or v2_sunset (past the sunset); the message names the successor'),
        NoSuccessor: errorResponse('no_v4_successor: no legacy v2 service (LEGACY_V2_UPSTREAM) is configured to serve this endpoint'),
        Error: errorResponse('The v4 error (status, code and message) in the v2 shape'),
      },
    },
  };
}

import { describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/app/operation-table.js';
import { fillPath, openApiPath, pathParams, splitPath } from '../../src/kit/path-template.js';

/*
 * The one reading of `:name` paths that the CLI, the gateway (both v4 clients, the legacy forward,
 * the guide's examples) and both OpenAPI documents use.
 */

describe('path templates', () => {
  it('names the parameters in order, digits and underscores included', () => {
    expect(pathParams('/v4/orders/:orderId/events/:eventId')).toEqual(['orderId', 'eventId']);
    expect(pathParams('/v2/devices/:device_id2')).toEqual(['device_id2']);
    expect(pathParams('/v4/teams')).toEqual([]);
    expect(openApiPath('/v4/orders/:orderId/events/:eventId')).toBe('/v4/orders/{orderId}/events/{eventId}');
    expect(splitPath('/v4/orders/:orderId/events/:eventId')).toEqual(['/v4/orders/', 'orderId', '/events/', 'eventId', '']);
    expect(splitPath('/v4/teams')).toEqual(['/v4/teams']);
  });

  it('fills each parameter percent-encoded, so no value leaves its segment', () => {
    const { path } = fillPath('/v4/employees/:id/devices/:serial', { id: 'a/b?c#d', serial: '100% ü ..' });
    expect(path).toBe('/v4/employees/a%2Fb%3Fc%23d/devices/100%25%20%C3%BC%20..');
    expect(fillPath('/v4/orders/:orderId', { orderId: 42 }).path).toBe('/v4/orders/42');
  });

  it('hands back the values that are no parameter, untouched, for the query or the body', () => {
    const { path, rest } = fillPath('/v4/orders/:orderId', { orderId: 'o1', status: 'shipped', limit: 5, orderIdx: undefined });
    expect(path).toBe('/v4/orders/o1');
    expect(rest).toEqual({ status: 'shipped', limit: 5, orderIdx: undefined });
  });

  it('refuses a missing parameter, or a value that is no segment, naming the parameter and the path', () => {
    expect(() => fillPath('/v4/orders/:orderId/events', { status: 'shipped' })).toThrow('Path parameter orderId of /v4/orders/:orderId/events is missing');
    expect(() => fillPath('/v4/orders/:orderId', { orderId: null })).toThrow('Path parameter orderId of /v4/orders/:orderId is missing');
    expect(() => fillPath('/v4/orders/:orderId', { orderId: { id: 'x' } })).toThrow('orderId of /v4/orders/:orderId must be text or a number, not object');
    expect(() => fillPath('/v4/orders/:orderId', { orderId: ['x'] })).toThrow('must be text or a number, not a list');
    expect(() => fillPath('/v4/orders/:orderId', { orderId: Number.NaN })).toThrow('must be text or a number');
    // An inherited property is no value: only the input's own fields fill a path.
    expect(() => fillPath('/v4/things/:constructor', {})).toThrow('Path parameter constructor of /v4/things/:constructor is missing');
  });

  it('lets a caller judge and spell each segment itself', () => {
    const seen: Array<[string, unknown]> = [];
    const { path, rest } = fillPath('/v4/orders/:orderId/events/:eventId', { orderId: 'o 1', eventId: 7, note: 'x' }, (name, value) => {
      seen.push([name, value]);
      return `<${name}>`;
    });
    expect(path).toBe('/v4/orders/<orderId>/events/<eventId>');
    expect(seen).toEqual([['orderId', 'o 1'], ['eventId', 7]]);
    expect(rest).toEqual({ note: 'x' });
  });

  it('reads every path of the operation table', () => {
    for (const op of OPERATIONS) {
      const values = Object.fromEntries(pathParams(op.path).map((name) => [name, `${name}-value`]));
      const { path } = fillPath(op.path, values);
      expect(path, op.name).not.toContain(':');
      expect(openApiPath(op.path).match(/\{\w+\}/g)?.length ?? 0, op.name).toBe(pathParams(op.path).length);
    }
  });
});

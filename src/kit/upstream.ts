import http from 'node:http';
import https from 'node:https';

/*
 * Calls from this service to an upstream (the v4 core behind the separate gateway, the legacy v2
 * API, the courier API). Not fetch: Node 20's fetch keeps the socket of a call aborted before the answer's headers
 * (until the upstream answers, or for its 300 s headers timeout), so a hung upstream piles sockets
 * up under load. Here a call past its timeout destroys its own socket.
 */

export interface UpstreamResponse {
  status: number;
  contentType: string | undefined;
  /** The whole body, read within the timeout. */
  text: string;
}

export interface UpstreamRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Bounds the whole call, body included; past it the call fails with an Error named TimeoutError. */
  timeoutMs: number;
}

// Connections to an upstream are kept alive between calls, as fetch did.
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

export function callUpstream(url: string, init: UpstreamRequest): Promise<UpstreamResponse> {
  const target = new URL(url);
  const secure = target.protocol === 'https:';
  const headers = init.body === undefined ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request(target, { method: init.method, headers, agent: secure ? agents.https : agents.http });
    const timer = setTimeout(() => {
      const timeout = new Error(`no answer within ${init.timeoutMs} ms`);
      timeout.name = 'TimeoutError';
      request.destroy(timeout);
    }, init.timeoutMs);
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    request.on('error', fail);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', fail);
      response.on('end', () => {
        clearTimeout(timer);
        resolve({ status: response.statusCode ?? 0, contentType: response.headers['content-type'], text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    request.end(init.body);
  });
}

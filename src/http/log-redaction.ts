import type { IncomingMessage } from 'node:http';

/*
 * Fastify logs every request's URL. Credentials do travel in query strings (OAuth redirects carry
 * ?code=, some clients send ?api_key= or ?token=), so the logged URL keeps parameter names and
 * masks the values of those that can be secrets.
 */

const SECRET_PARAMS = new Set([
  'code',
  'key',
  'pin',
  'sig',
  'jwt',
  'otp',
  'ticket',
  'session',
  'sessionid',
  'signature',
  'assertion',
  'usercode',
  'devicecode',
]);
// Normalised name (lower case, no _ or -) containing one of these is masked too: access_token, client_secret, pinCode…
const SECRET_FRAGMENTS = /token|secret|passw|apikey|pincode|credential/;

export const isSecretParam = (name: string) => {
  const normalised = name.toLowerCase().replace(/[-_]/g, '');
  return SECRET_PARAMS.has(normalised) || SECRET_FRAGMENTS.test(normalised);
};

/** The URL with the values of secret-looking query parameters replaced by [redacted]. */
export function redactUrl(url: string): string {
  const start = url.indexOf('?');
  if (start < 0) return url;
  const query = url
    .slice(start + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const name = equals < 0 ? pair : pair.slice(0, equals);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // A malformed name is judged as sent.
      }
      return equals >= 0 && isSecretParam(decoded) ? `${name}=[redacted]` : pair;
    })
    .join('&');
  return `${url.slice(0, start)}?${query}`;
}

interface LoggedRequest extends Pick<IncomingMessage, 'method' | 'headers' | 'socket'> {
  url?: string;
  host?: string;
  ip?: string;
}

/** Fastify's request serializer, with the URL redacted; headers are not logged at all. */
export function requestSerializer(request: LoggedRequest) {
  return {
    method: request.method,
    url: request.url === undefined ? undefined : redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/*
 * Test-only: runs inside the network namespace of test/oauth/cimd-https.test.ts, beside the service.
 * It is the clients' hosts on "the internet": an https server answering, on port 443 of every
 * address of the namespace, the client metadata documents of documents.json, with the certificate
 * the test's CA signed. It also bridges the service's port to a unix socket in the test's directory,
 * the one way in from the test's side (a namespace has its own loopback). Each connection and each
 * document request is appended to requests.log, so the test can tell what was fetched, and from where.
 *
 * Started by the namespace's shell with the service's command line as its arguments (for `--port`);
 * it exits when the service does.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import process from 'node:process';
import { setInterval } from 'node:timers';

const dir = process.env.SVC_TEST_CIMD_DIR;
const servicePort = Number(process.argv[process.argv.indexOf('--port') + 1]);
const parent = process.ppid;

const documents = createHttpsServer({ key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')) }, (request, response) => {
  const url = `https://${request.headers.host}${request.url}`;
  appendFileSync(join(dir, 'requests.log'), `GET ${url}\n`);
  const document = JSON.parse(readFileSync(join(dir, 'documents.json'), 'utf8'))[url];
  if (document === undefined) return void response.writeHead(404).end();
  response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=3600' }).end(JSON.stringify(document));
});
// Every connection is logged with the address it reached, before any TLS: a refused fetch must open none.
documents.on('connection', (socket) => appendFileSync(join(dir, 'requests.log'), `connection to ${socket.localAddress}\n`));
documents.listen(443, '0.0.0.0');

createServer((outside) => {
  const service = connect(servicePort, '127.0.0.1');
  outside.pipe(service).pipe(outside);
  outside.on('error', () => service.destroy());
  service.on('error', () => outside.destroy());
}).listen(join(dir, 'service.sock'));

// The service is this process's parent (the shell exec'd into it): once it is gone, so is this.
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 200);

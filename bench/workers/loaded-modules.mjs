// Preloaded with --import: on exit, prints which files the process loaded through the ESM loader
// (its own modules, and those of the packages it uses) as one JSON line on stderr.
import process from 'node:process';
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const { port1, port2 } = new MessageChannel();
const urls = new Set();
port1.on('message', (url) => urls.add(url));
port1.unref();
const hooks = `let port; export async function initialize(data) { port = data.port; }
export async function load(url, context, next) { port.postMessage(url); return next(url, context); }`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, { data: { port: port2 }, transferList: [port2] });

process.on('exit', () => {
  const files = [...urls].filter((url) => url.startsWith('file:'));
  const own = files.filter((url) => !url.includes('/node_modules/'));
  const packages = new Set(
    files
      .filter((url) => url.includes('/node_modules/'))
      .map((url) => {
        const [scope = '', name = ''] = url.split('/node_modules/').pop().split('/');
        return scope.startsWith('@') ? `${scope}/${name}` : scope;
      }),
  );
  process.stderr.write(`\nLOADED_MODULES ${JSON.stringify({ own: own.length, packages: [...packages].sort() })}\n`);
});

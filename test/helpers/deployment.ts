import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { untilHealthy } from './healthz.js';
import { ServerProcess } from './server-process.js';

/*
 * The files of deploy/ as an operator installs them, run here without systemd: a unit's ExecStart
 * run natively with its environment file, and the nginx configuration included by a minimal
 * nginx.conf, with the addresses substituted as docs/deployment.md tells an operator to.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where the units expect the service and node (docs/deployment.md): replaced by this checkout and this node. */
const INSTALL_DIR = '/opt/device-lifecycle-service';
const NODE = '/usr/bin/node';

export const deployFile = (path: string) => join(ROOT, 'deploy', path);

/** A systemd unit file: each section's keys, each with its values in order (a key may repeat). */
export type Unit = Map<string, Map<string, string[]>>;

export function readUnit(path: string): Unit {
  const unit: Unit = new Map();
  let section: Map<string, string[]> | undefined;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const text = line.trim();
    if (text === '' || text.startsWith('#') || text.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(text);
    if (header) {
      section = new Map();
      unit.set(header[1]!, section);
      continue;
    }
    const assignment = /^([A-Za-z]+)=(.*)$/.exec(text);
    if (!assignment || !section) throw new Error(`${path}: not a key=value line inside a section: ${text}`);
    section.set(assignment[1]!, [...(section.get(assignment[1]!) ?? []), assignment[2]!]);
  }
  return unit;
}

/** The last value of `key` in `section` (systemd's rule for single-valued keys). */
export function unitValue(unit: Unit, section: string, key: string): string | undefined {
  return unit.get(section)?.get(key)?.at(-1);
}

/** An EnvironmentFile as systemd reads the plain `NAME=value` lines these files hold; anything else is refused. */
export function readEnvFile(path: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const text = line.trim();
    if (text === '' || text.startsWith('#')) continue;
    const assignment = /^([A-Z][A-Z0-9_]*)=(\S*)$/.exec(text);
    if (!assignment) throw new Error(`${path}: not a NAME=value line: ${text}`);
    env[assignment[1]!] = assignment[2]!;
  }
  return env;
}

/** A unit's ExecStart for instance `instance` (its %i), pointed at this checkout and this node. */
export function execStartOf(unit: Unit, instance: string): string[] {
  const command = unitValue(unit, 'Service', 'ExecStart');
  if (!command) throw new Error('the unit has no ExecStart');
  return command
    .split(/\s+/)
    .map((word) => word.replaceAll('%i', instance))
    .map((word) => (word === NODE ? process.execPath : word.replace(INSTALL_DIR, ROOT)));
}

/**
 * Instance `port` of a unit started as systemd would start it: ExecStart with only the environment
 * file's variables (and PATH). stop() is systemctl stop: the unit's KillSignal, SIGTERM.
 */
export function startUnit(unit: Unit, port: number, env: Record<string, string>): ServerProcess {
  return ServerProcess.launch(execStartOf(unit, String(port)), {
    url: `http://${env.HOST ?? '127.0.0.1'}:${port}`,
    env: { PATH: process.env.PATH, ...env },
    cwd: (unitValue(unit, 'Service', 'WorkingDirectory') ?? INSTALL_DIR).replace(INSTALL_DIR, ROOT),
  });
}

/** The addresses an operator sets in the shipped nginx configuration (docs/deployment.md), here loopback ports. */
export interface NginxAddresses {
  cores: number[];
  gateways: number[];
  /** The plain-http listener (redirects to https), the https one, and the gateways' loopback listener to the cores. */
  http: number;
  https: number;
  gatewayToCores: number;
}

const SHIPPED_NGINX = deployFile('nginx/device-lifecycle-service.conf');

/** The shipped configuration with `addresses` and a self-signed certificate in `dir`, included by a minimal nginx.conf there. */
export function writeNginxConfig(dir: string, addresses: NginxAddresses): string {
  const shipped = readFileSync(SHIPPED_NGINX, 'utf8');
  const upstream = (name: string, ports: number[]) => (text: string) =>
    text.replace(new RegExp(`(upstream ${name} \\{[\\s\\S]*?)((?:\\n\\s*server [^\\n]+)+)`), (_all, head: string, servers: string) => {
      const options = /server \S+ ([^;]*);/.exec(servers)![1]!;
      return `${head}${ports.map((port) => `\n    server 127.0.0.1:${port} ${options};`).join('')}`;
    });
  let config = [upstream('svc_cores', addresses.cores), upstream('svc_gateways', addresses.gateways)].reduce((text, edit) => edit(text), shipped);
  config = config
    .replace(/listen 80;/, `listen 127.0.0.1:${addresses.http};`)
    .replace(/listen 443 /, `listen 127.0.0.1:${addresses.https} `)
    .replace(/listen 127\.0\.0\.1:8080;/, `listen 127.0.0.1:${addresses.gatewayToCores};`)
    .replace(/ssl_certificate \S+;/, `ssl_certificate ${dir}/cert.pem;`)
    .replace(/ssl_certificate_key \S+;/, `ssl_certificate_key ${dir}/key.pem;`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=svc.example.com',
    '-addext', 'subjectAltName=DNS:svc.example.com,IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  writeFileSync(join(dir, 'device-lifecycle-service.conf'), config);
  // Which cores each request was sent to, and what they answered (two when nginx moved it to the other).
  return writeNginxMain(dir, `log_format upstreams '$request_method $uri $status upstreams=$upstream_addr statuses=$upstream_status';
  access_log ${dir}/access.log upstreams;
  include ${dir}/device-lifecycle-service.conf;`);
}

/**
 * `dir`/nginx.conf: Debian's /etc/nginx/nginx.conf reduced to one worker in the foreground, its pid,
 * logs and temporary files in `dir`, and `http` inside its http block. Returns its path.
 */
export function writeNginxMain(dir: string, http: string): string {
  const main = join(dir, 'nginx.conf');
  writeFileSync(
    main,
    `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log notice;
events { worker_connections 1024; }
http {
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  ${http}
}
`,
  );
  return main;
}

/** nginx running the shipped configuration on `addresses`; `agent` trusts its certificate. */
export class Nginx {
  readonly agent: Agent;

  private constructor(
    readonly dir: string,
    readonly addresses: NginxAddresses,
    private readonly child: ChildProcess,
    private readonly exited: Promise<unknown>,
  ) {
    this.agent = new Agent({ ca: readFileSync(join(dir, 'cert.pem')), keepAlive: true, maxSockets: 64 });
  }

  static async start(addresses: NginxAddresses): Promise<Nginx> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-nginx-'));
    // nginx's workers run as nobody when started by root: they must reach the temp paths.
    chmodSync(dir, 0o755);
    const main = writeNginxConfig(dir, addresses);
    const child = spawn('nginx', ['-p', dir, '-e', join(dir, 'error.log'), '-c', main], { stdio: ['ignore', 'ignore', 'pipe'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const nginx = new Nginx(dir, addresses, child, exited);
    if (!(await untilHealthy(`http://127.0.0.1:${addresses.http}`, child, { timeoutMs: 10_000, probe: '/' , accept: (status) => status === 308 }))) {
      await nginx.stop();
      throw new Error(`nginx did not start: ${nginx.errorLog()}`);
    }
    return nginx;
  }

  get url(): string {
    return `https://127.0.0.1:${this.addresses.https}`;
  }

  errorLog(): string {
    try {
      return readFileSync(join(this.dir, 'error.log'), 'utf8');
    } catch {
      return '(no error log)';
    }
  }

  /** The access log's lines so far: `METHOD uri status upstreams=… statuses=…`. */
  accessLog(): string[] {
    return readFileSync(join(this.dir, 'access.log'), 'utf8').split('\n').filter((line) => line !== '');
  }

  /** A graceful stop (SIGQUIT), and its files removed. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGQUIT');
    await this.exited;
    this.agent.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * One request, over `agent` when given (https through nginx) or plain http. A failed connection
 * rejects; a status, whatever it is, resolves.
 */
export function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string; agent?: Agent } = {}): Promise<Answer> {
  const { method = 'GET', headers = {}, body, agent } = options;
  const target = new URL(url);
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const outgoing = request(
      target,
      { method, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers }, ...(agent ? { agent, servername: 'svc.example.com' } : {}) },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: text }));
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** The sum of `metric`'s samples whose labels include every one of `labels`, in a Prometheus text. */
export function sampleSum(text: string, metric: string, labels: Record<string, string>): number {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`) && Object.entries(labels).every(([name, value]) => line.includes(`${name}="${value}"`)))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/** What the demo seed shows once, and what the tests and the benchmark use of it. */
export interface DeploymentDemo {
  apiKeys: { admin: string };
  legacyKeys: { full: string };
  companies: { acme: string };
}

/**
 * Two cores and a gateway started from their units and environment files, behind nginx running the
 * shipped configuration, on one PostgreSQL schema (made from `databaseUrl`, seeded with the demo) and
 * one Redis, as deploy/ lays them out on one machine.
 */
export class Deployment {
  private constructor(
    readonly nginx: Nginx,
    readonly cores: ServerProcess[],
    readonly gateway: ServerProcess,
    readonly demo: DeploymentDemo,
    private readonly coreEnv: Record<string, string>,
  ) {}

  static async start(machine: { DATABASE_URL: string; REDIS_URL: string; REDIS_KEY_PREFIX: string; SVC_SECRET_KEY: string }, freePort: () => Promise<number>): Promise<Deployment> {
    const coreEnv = { ...readEnvFile(deployFile('systemd/core.env')), ...machine };
    const seeded = execFileSync(process.execPath, [join(ROOT, 'dist/src/main.js'), 'seed', '--demo', '--json'], { env: { PATH: process.env.PATH, ...coreEnv }, encoding: 'utf8' });
    const demo = JSON.parse(seeded) as DeploymentDemo;
    const addresses: NginxAddresses = {
      cores: [await freePort(), await freePort()],
      gateways: [await freePort()],
      http: await freePort(),
      https: await freePort(),
      gatewayToCores: await freePort(),
    };
    const nginx = await Nginx.start(addresses);
    const started: ServerProcess[] = [];
    try {
      const coreUnit = readUnit(deployFile('systemd/svc-core@.service'));
      for (const port of addresses.cores) started.push(startUnit(coreUnit, port, coreEnv));
      const { REDIS_URL: _redis, REDIS_KEY_PREFIX: _prefix, ...gatewayMachine } = machine;
      const gateway = startUnit(readUnit(deployFile('systemd/svc-gateway@.service')), addresses.gateways[0]!, {
        ...readEnvFile(deployFile('systemd/gateway.env')),
        ...gatewayMachine,
        V4_UPSTREAM: `http://127.0.0.1:${addresses.gatewayToCores}`,
      });
      started.push(gateway);
      for (const instance of started) await instance.ready();
      return new Deployment(nginx, started.slice(0, 2), gateway, demo, coreEnv);
    } catch (error) {
      for (const instance of started) await instance.kill9();
      await nginx.stop();
      throw error;
    }
  }

  /** Starts core `index` again from its unit, on its port (after it stopped); resolves once /readyz answers 200. */
  async startCore(index: number): Promise<ServerProcess> {
    const core = startUnit(readUnit(deployFile('systemd/svc-core@.service')), this.nginx.addresses.cores[index]!, this.coreEnv);
    this.cores[index] = core;
    return core.ready();
  }

  async stop(): Promise<void> {
    for (const instance of [...this.cores, this.gateway]) await instance.kill9();
    await this.nginx.stop();
  }
}

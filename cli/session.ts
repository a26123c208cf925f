import { activeAccount, configPath, readConfig, requireCredential, resolveCredential, resolveTarget, type CredentialFlags, type ResolvedCredential, type StoredConfig, type Target } from './config.js';
import type { CliIo } from './io.js';
import { callApi, parseTimeout, type ApiRequest, type Envelope } from './http.js';
import { chooseFormat, DATA_FORMATS, type DataFormat } from './output.js';

export interface GlobalOptions extends CredentialFlags {
  format?: string;
  timeout?: string;
}

/** What every API command shares: the global flags, the run's io, the config file and the resolved credential and address. */
export class Session {
  private stored: StoredConfig | undefined;

  constructor(
    readonly options: GlobalOptions,
    readonly io: CliIo,
    readonly configFile: string = configPath(io.env),
  ) {}

  get format(): DataFormat {
    return chooseFormat(this.options.format, DATA_FORMATS);
  }

  get config(): StoredConfig {
    this.stored ??= readConfig(this.configFile);
    return this.stored;
  }

  credential(): ResolvedCredential | undefined {
    return resolveCredential(this.options, this.io.env, this.config);
  }

  /** The server: the flags', else the active account's, whichever key is used. */
  target(): Target {
    return resolveTarget(this.options, activeAccount(this.config), this.config);
  }

  /** Seconds to wait for each answer: --timeout, else SVC_TIMEOUT, else the default. */
  get timeoutSeconds(): number {
    return parseTimeout(this.options.timeout, this.io.env);
  }

  /** One call to a given server with a given key, within the timeout. */
  request(target: Target, apiKey: string, request: ApiRequest): Promise<Envelope & { ok: true }> {
    return callApi(this.io.fetch, target, apiKey, request, this.timeoutSeconds);
  }

  /** One authenticated call, with the address checked before the key is sent anywhere. */
  async call(request: ApiRequest): Promise<Envelope & { ok: true }> {
    const target = this.target();
    const credential = requireCredential(this.credential());
    return this.request(target, credential.apiKey, request);
  }
}

import { configPath, readConfig, requireCredential, resolveCredential, resolveTarget, type CredentialFlags, type ResolvedCredential, type StoredConfig, type Target } from './config.js';
import { usageError } from './exit-codes.js';
import { callApi, type ApiRequest, type Envelope } from './http.js';
import { DATA_FORMATS, type DataFormat } from './output.js';

export interface GlobalOptions extends CredentialFlags {
  format?: string;
}

/** What every API command shares: the global flags, the config file and the resolved credential and address. */
export class Session {
  private stored: StoredConfig | undefined;

  constructor(
    readonly options: GlobalOptions,
    readonly env: NodeJS.ProcessEnv = process.env,
    readonly configFile: string = configPath(env),
  ) {}

  get format(): DataFormat {
    const format = this.options.format ?? 'table';
    if (!(DATA_FORMATS as readonly string[]).includes(format)) throw usageError(`--format ${format}: use one of ${DATA_FORMATS.join(', ')}`);
    return format as DataFormat;
  }

  get config(): StoredConfig {
    this.stored ??= readConfig(this.configFile);
    return this.stored;
  }

  credential(): ResolvedCredential | undefined {
    return resolveCredential(this.options, this.env, this.config);
  }

  target(credential = this.credential()): Target {
    return resolveTarget(this.options, credential, this.config);
  }

  /** One authenticated call, with the address checked before the key is sent anywhere. */
  async call(request: ApiRequest): Promise<Envelope & { ok: true }> {
    const target = this.target();
    const credential = requireCredential(this.credential());
    return callApi(target, credential.apiKey, request);
  }
}

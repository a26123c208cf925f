// oidc-provider ships no type declarations; these cover only what this service uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface AdapterPayload {
    [key: string]: unknown;
    accountId?: string;
    grantId?: string;
    uid?: string;
    userCode?: string;
    consumed?: unknown;
  }

  export interface Adapter {
    upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<void>;
    destroy(id: string): Promise<void>;
    revokeByGrantId(grantId: string): Promise<void>;
  }

  export interface ClientMetadata {
    [key: string]: unknown;
    client_id?: string;
    client_name?: string;
    application_type?: string;
    redirect_uris?: string[];
    token_endpoint_auth_method?: string;
  }

  export interface Client {
    clientId: string;
    clientName?: string;
    redirectUris: string[];
    metadata(): ClientMetadata;
  }

  export interface InteractionDetails {
    uid: string;
    prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
    params: Record<string, unknown> & { client_id: string; redirect_uri?: string; scope?: string; resource?: string | string[] };
    session?: { accountId: string };
    grantId?: string;
  }

  export class GrantModel {
    constructor(properties: { accountId: string; clientId: string });
    jti: string;
    /** What the user declined, per resource: space-separated scopes. */
    rejected?: { resources?: Record<string, string> };
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    addResourceScope(resource: string, scope: string): void;
    rejectResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
    static find(id: string): Promise<GrantModel | undefined>;
  }

  export interface InteractionResult {
    login?: { accountId: string; remember?: boolean };
    consent?: { grantId: string };
    error?: string;
    error_description?: string;
  }

  export interface KoaContextLike {
    oidc: { client?: Client; params?: Record<string, unknown> };
  }

  export class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    proxy: boolean;
    Grant: typeof GrantModel;
    Client: { find(id: string): Promise<Client | undefined> };
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    /** Koa middleware, run before the provider's routes (each declares the part of the context it reads). */
    use(middleware: (ctx: never, next: () => Promise<void>) => Promise<void>): this;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionResult(
      req: IncomingMessage,
      res: ServerResponse,
      result: InteractionResult,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<string>;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }

  export const errors: {
    CustomOIDCProviderError: new (error: string, description: string) => Error;
    InvalidTarget: new (description?: string) => Error;
    InvalidGrant: new (detail?: string) => Error;
  };

  export default Provider;
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapterClass } from '../../src/oauth/adapter.js';
import { backends, startTestApp, type TestApp } from '../helpers/harness.js';

/*
 * The storage adapter's consumption of authorization codes, directly: oidc-provider checks
 * "consumed?" before it consumes, so two exchanges racing past that check both reach consume().
 * The adapter must let exactly one of them win.
 */

describe.each(backends())('OAuth storage adapter [%s]', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { seed: false });
  });
  afterAll(async () => {
    await t.close();
  });

  it('consumes an authorization code once: of concurrent consumptions exactly one succeeds', async () => {
    const Adapter = createAdapterClass({ db: t.core.db, now: t.core.now, refreshGraceSeconds: 30 });
    const codes = new Adapter('AuthorizationCode');
    await codes.upsert('code-raced', { grantId: 'grant-1', kind: 'AuthorizationCode' }, 60);
    const outcomes = await Promise.allSettled([codes.consume('code-raced'), codes.consume('code-raced'), codes.consume('code-raced')]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected', 'rejected']);
    for (const o of outcomes) if (o.status === 'rejected') expect((o.reason as { error?: string }).error).toBe('invalid_grant');
    expect(await codes.find('code-raced')).toMatchObject({ consumed: expect.any(String) });
  });

  it('a rotated refresh token reads as unused within its grace window; consuming it again is refused without harm', async () => {
    const Adapter = createAdapterClass({ db: t.core.db, now: t.core.now, refreshGraceSeconds: 30 });
    const refreshTokens = new Adapter('RefreshToken');
    const accessTokens = new Adapter('AccessToken');
    await refreshTokens.upsert('refresh-twice', { grantId: 'grant-2', kind: 'RefreshToken' }, 60);
    await accessTokens.upsert('access-of-grant-2', { grantId: 'grant-2', kind: 'AccessToken' }, 60);
    await refreshTokens.consume('refresh-twice');
    expect(await refreshTokens.find('refresh-twice')).not.toHaveProperty('consumed');
    // Only a twin racing the rotation on another instance gets here (the provider answers the others).
    await expect(refreshTokens.consume('refresh-twice')).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await accessTokens.find('access-of-grant-2')).toBeDefined();
  });

  it('after the grace window a rotated refresh token is a replay: consuming it deletes every record of its grant', async () => {
    let ahead = 0;
    const Adapter = createAdapterClass({ db: t.core.db, now: () => new Date(Date.now() + ahead), refreshGraceSeconds: 30 });
    const refreshTokens = new Adapter('RefreshToken');
    const accessTokens = new Adapter('AccessToken');
    await refreshTokens.upsert('refresh-late', { grantId: 'grant-3', kind: 'RefreshToken' }, 600);
    await accessTokens.upsert('access-of-grant-3', { grantId: 'grant-3', kind: 'AccessToken' }, 600);
    await refreshTokens.consume('refresh-late');
    ahead = 31_000;
    expect(await refreshTokens.find('refresh-late')).toMatchObject({ consumed: expect.any(String) });
    await expect(refreshTokens.consume('refresh-late')).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await accessTokens.find('access-of-grant-3')).toBeUndefined();
    expect(await refreshTokens.find('refresh-late')).toBeUndefined();
  });
});

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

  it('lets a rotated refresh token be consumed again (its grace window is read, not refused)', async () => {
    const Adapter = createAdapterClass({ db: t.core.db, now: t.core.now, refreshGraceSeconds: 30 });
    const refreshTokens = new Adapter('RefreshToken');
    await refreshTokens.upsert('refresh-twice', { grantId: 'grant-2', kind: 'RefreshToken' }, 60);
    await refreshTokens.consume('refresh-twice');
    await expect(refreshTokens.consume('refresh-twice')).resolves.toBeUndefined();
  });

  it('refuses a third use of a refresh token and deletes every record of its grant', async () => {
    const Adapter = createAdapterClass({ db: t.core.db, now: t.core.now, refreshGraceSeconds: 30 });
    const refreshTokens = new Adapter('RefreshToken');
    const accessTokens = new Adapter('AccessToken');
    await refreshTokens.upsert('refresh-thrice', { grantId: 'grant-3', kind: 'RefreshToken' }, 60);
    await accessTokens.upsert('access-of-grant-3', { grantId: 'grant-3', kind: 'AccessToken' }, 60);
    await refreshTokens.consume('refresh-thrice');
    await refreshTokens.consume('refresh-thrice');
    expect(await refreshTokens.find('refresh-thrice')).toMatchObject({ consumed: expect.any(String) });
    await expect(refreshTokens.consume('refresh-thrice')).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await accessTokens.find('access-of-grant-3')).toBeUndefined();
    expect(await refreshTokens.find('refresh-thrice')).toBeUndefined();
  });
});

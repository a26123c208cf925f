import { describe, expect, it } from 'vitest';
import { cutoverOf, type CutoverFacts } from '../../src/gateway/cutover-stage.js';
import { callsSince, leastCapabilities, ruleFor } from '../../src/gateway/scope-rules.js';

const day = (n: number) => new Date(Date.UTC(2026, 10, 1 + n, 9)).toISOString();
const NOW = new Date(day(30));

const facts = (overrides: Partial<CutoverFacts> = {}): CutoverFacts => ({
  createdAt: day(0),
  lastUsedAt: day(5),
  hasV4Successor: true,
  successor: null,
  disabled: null,
  enabled: null,
  ...overrides,
});
const successor = (overrides: Partial<NonNullable<CutoverFacts['successor']>> = {}) => ({
  keyId: 'abcd1234',
  userId: 'usr_1',
  capabilities: ['mcp:employees:read' as const],
  mintedAt: day(6),
  firstUsedAt: day(8),
  active: true,
  ...overrides,
});
const dates = (f: CutoverFacts, now = NOW) => cutoverOf(f, now, 14, false).stages.map((s) => s.at);

describe('cutover stage', () => {
  it('follows the recorded facts, one stage after the other', () => {
    expect(cutoverOf(facts(), NOW, 14, false).stage).toBe('v2_only');
    expect(cutoverOf(facts({ successor: successor({ firstUsedAt: null }) }), NOW, 14, false).stage).toBe('successor_minted');
    expect(cutoverOf(facts({ successor: successor() }), new Date(day(10)), 14, false).stage).toBe('successor_working');
    expect(cutoverOf(facts({ successor: successor() }), NOW, 14, false).stage).toBe('v2_quiet');
    expect(dates(facts({ successor: successor(), disabled: { at: day(25), by: 'admin', reason: null } }))).toEqual([day(0), day(6), day(8), day(19), day(25)]);
  });

  it('dates v2 quiet from the later of N quiet days and the successor working', () => {
    // v2 went quiet long before the successor worked: quiet from its first call.
    expect(dates(facts({ lastUsedAt: null, successor: successor({ mintedAt: day(20), firstUsedAt: day(22) }) }))).toEqual([day(0), day(20), day(22), day(22), null]);
    const before = cutoverOf(facts({ successor: successor() }), new Date(day(18)), 14, false);
    expect(before).toMatchObject({ stage: 'successor_working', quietSince: day(5), quietFrom: day(19) });
    expect(before.nextStep).toBe('Move the remaining calls to v4: with no further v2 call, the key is quiet on 2026-11-20');
  });

  it('starts over when the successor stops working, and skips no date it never reached', () => {
    const revoked = cutoverOf(facts({ successor: successor({ active: false }) }), NOW, 14, false);
    expect(revoked).toMatchObject({ stage: 'v2_only', successor: { maskedKey: 'svc_sk_abcd1234_…', active: false } });
    expect(revoked.nextStep).toBe('Mint a new successor v4 key: the previous one (svc_sk_abcd1234_…) no longer works');
    // Disabled before the key was ever quiet, or without any successor.
    expect(dates(facts({ successor: successor(), disabled: { at: day(12), by: 'operator', reason: null } }))).toEqual([day(0), day(6), day(8), null, day(12)]);
    expect(cutoverOf(facts({ disabled: { at: day(9), by: 'policy', reason: 'r' } }), NOW, 14, true)).toMatchObject({ stage: 'v2_disabled', nextStep: null });
  });

  it('counts quiet again from the undo of a disable, whichever is later of it and the last v2 call', () => {
    const undone = cutoverOf(facts({ successor: successor(), enabled: { at: day(25), by: 'admin', reason: 'r' } }), NOW, 14, true);
    expect(undone).toMatchObject({ stage: 'successor_working', quietSince: day(25), quietFrom: day(39), enabled: { at: day(25), by: 'admin' } });
    expect(cutoverOf(facts({ lastUsedAt: day(28), enabled: { at: day(25), by: 'operator', reason: null } }), NOW, 14, false).quietSince).toBe(day(28));
  });

  it('says what comes next, the policy included', () => {
    expect(cutoverOf(facts({ hasV4Successor: false }), NOW, 14, false).nextStep).toBe('None of its scopes has a v4 successor: it stays on v2 until the sunset');
    expect(cutoverOf(facts({ successor: successor() }), NOW, 14, true).nextStep).toBe('Disabled automatically at the next policy check');
  });
});

describe('scope rules shared by the audit and the successor', () => {
  const rules = [
    { name: 'api.teams.getAll', capability: 'mcp:teams:read' },
    { name: 'api.employees.getAll', capability: 'mcp:employees:read' },
    { name: 'api.employee.update', capability: 'mcp:employees:write' },
    { name: 'api.organization.*', capability: undefined },
    { name: 'api.orders.*', capability: 'mcp:orders:read' },
  ];

  it('finds an exact rule before a wildcard', () => {
    expect(ruleFor(rules, 'api.organization.companies.getAll')?.name).toBe('api.organization.*');
    expect(ruleFor(rules, 'api.teams.getAll')?.name).toBe('api.teams.getAll');
    expect(ruleFor(rules, 'api.unknown')).toBeUndefined();
  });

  it('grants the capabilities of the scopes called since the window start, in table order; all of them without usage', () => {
    const scopes = ['api.employee.update', 'api.employees.getAll', 'api.teams.getAll', 'api.organization.*', 'api.orders.*'];
    expect(leastCapabilities(rules, scopes)).toEqual(['mcp:teams:read', 'mcp:employees:read', 'mcp:employees:write', 'mcp:orders:read']);
    const rows = [
      { day: '2026-11-02', scope: 'api.employees.getAll', calls: 3 },
      { day: '2026-10-01', scope: 'api.employee.update', calls: 9 },
      // A wildcard the key holds counts the scopes under it.
      { day: '2026-11-03', scope: 'api.orders.getAll', calls: 1 },
      { day: '2026-11-03', scope: 'api.organization.companies.getAll', calls: 4 },
    ];
    expect(callsSince(rows, 'api.orders.*', '2026-11-01')).toBe(1);
    expect(leastCapabilities(rules, scopes, { rows, since: '2026-11-01' })).toEqual(['mcp:employees:read', 'mcp:orders:read']);
  });
});

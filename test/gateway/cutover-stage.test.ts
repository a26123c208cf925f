import { describe, expect, it } from 'vitest';
import { cutoverOf, type CutoverFacts } from '../../src/legacy/cutover-stage.js';
import { callsSince, leastCapabilities, ruleFor } from '../../src/legacy/scope-rules.js';

const day = (n: number) => new Date(Date.UTC(2026, 10, 1 + n, 9)).toISOString();
const NOW = new Date(day(30));

const facts = (overrides: Partial<CutoverFacts> = {}): CutoverFacts => ({
  keyId: 'lk_1',
  createdAt: day(0),
  lastUsedAt: day(5),
  lastMovableDay: day(5).slice(0, 10),
  needed: [],
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
  exercised: [],
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
    expect(dates(facts({ successor: successor(), disabled: { at: day(25), by: 'admin', reason: null } }))).toEqual([day(0), day(6), day(8), null, day(19), day(25)]);
  });

  it('dates v2 quiet from the later of N quiet days and the successor working', () => {
    // v2 went quiet long before the successor worked: quiet from its first call.
    expect(dates(facts({ lastUsedAt: null, successor: successor({ mintedAt: day(20), firstUsedAt: day(22) }) }))).toEqual([day(0), day(20), day(22), null, day(22), null]);
    const before = cutoverOf(facts({ successor: successor() }), new Date(day(18)), 14, false);
    expect(before).toMatchObject({ stage: 'successor_working', quietSince: day(5), quietFrom: day(19) });
    expect(before.nextStep).toBe('Move the remaining calls to v4: with no further v2 call, the key is quiet on 2026-11-20');
  });

  it('starts over when the successor stops working, and skips no date it never reached', () => {
    const revoked = cutoverOf(facts({ successor: successor({ active: false }) }), NOW, 14, false);
    expect(revoked).toMatchObject({ stage: 'v2_only', successor: { maskedKey: 'svc_sk_abcd1234_…', active: false } });
    expect(revoked.nextStep).toBe('Mint a new successor v4 key: the previous one (svc_sk_abcd1234_…) no longer works');
    // Disabled before the key was ever quiet, or without any successor.
    expect(dates(facts({ successor: successor(), disabled: { at: day(12), by: 'operator', reason: null } }))).toEqual([day(0), day(6), day(8), null, null, day(12)]);
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

describe('a working successor', () => {
  const reader = successor({ capabilities: ['mcp:employees:read', 'mcp:employees:write'], firstUsedAt: day(7), exercised: [{ capability: 'mcp:employees:read', at: day(9) }] });

  it('covers what the v2 calls need: its first call alone is not enough', () => {
    const needsRead = facts({ needed: ['mcp:employees:read'], successor: successor({ exercised: [] }) });
    const minted = cutoverOf(needsRead, new Date(day(10)), 14, false);
    expect(minted).toMatchObject({ stage: 'successor_minted', coverage: { needed: ['mcp:employees:read'], lacking: [], unexercised: ['mcp:employees:read'] } });
    expect(minted.nextStep).toBe(
      "Make successful v4 calls with the successor key svc_sk_abcd1234_… needing mcp:employees:read, as the key's v2 calls do: it works once its calls cover them",
    );
    // Working from the call that covered the last needed capability, not from the first call.
    const working = cutoverOf(facts({ needed: ['mcp:employees:read'], successor: reader }), new Date(day(10)), 14, false);
    expect(working).toMatchObject({ stage: 'successor_working', coverage: { lacking: [], unexercised: [] } });
    expect(working.stages.map((st) => st.at)).toEqual([day(0), day(6), day(9), null, null, null]);
  });

  it('moves back when a new kind of v2 call needs a capability the successor lacks or has not exercised, with the replace command', () => {
    const lacking = cutoverOf(facts({ needed: ['mcp:employees:read', 'mcp:teams:read'], successor: reader }), NOW, 14, false);
    expect(lacking).toMatchObject({ stage: 'successor_minted', coverage: { lacking: ['mcp:teams:read'], unexercised: [] } });
    expect(lacking.nextStep).toBe(
      "Replace the successor key svc_sk_abcd1234_…: the key's v2 calls need mcp:teams:read, which it lacks (`svc legacy-keys mint-successor lk_1 --replace --capabilities mcp:employees:read,mcp:employees:write,mcp:teams:read`)",
    );
    const unexercised = cutoverOf(facts({ needed: ['mcp:employees:read', 'mcp:employees:write'], successor: reader }), NOW, 14, false);
    expect(unexercised).toMatchObject({ stage: 'successor_minted', coverage: { lacking: [], unexercised: ['mcp:employees:write'] } });
  });

  it('says so when the only v2 calls left have no v4 successor, and still reaches quiet once they stop', () => {
    // Calls with a successor stopped on day 5; calls without one went on until day 28.
    const left = facts({ lastUsedAt: day(28), lastMovableDay: day(5).slice(0, 10), needed: ['mcp:employees:read'], successor: reader });
    const unmovable = cutoverOf(left, NOW, 14, false);
    expect(unmovable.stage).toBe('v2_unmovable_only');
    expect(unmovable.nextStep).toBe('Its remaining v2 calls have no v4 successor: they work until the sunset (disabling the key stops them)');
    // Quiet from the end of day 5's UTC day, 14 days on; the successor works from day 9.
    expect(unmovable.stages.map((st) => st.at)).toEqual([day(0), day(6), day(9), '2026-11-21T00:00:00.000Z', null, null]);
    expect(cutoverOf(left, new Date(day(50)), 14, false).stage).toBe('v2_quiet');
    // A key whose last call had a successor goes straight from working to quiet.
    expect(cutoverOf(facts({ needed: ['mcp:employees:read'], successor: reader }), NOW, 14, false).stages.map((st) => st.at)).toEqual([day(0), day(6), day(9), null, day(19), null]);
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

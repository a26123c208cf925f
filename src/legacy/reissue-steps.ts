/*
 * The reissue path of a legacy key, in the words and commands of the stages the cutover tracker
 * records (cutover-stage.ts): mint its successor (or replace one that lacks a capability), make v4
 * calls covering what its v2 calls need, let v2 go quiet, disable it. One source for the server's migration plan and the CLI's scope audit, so neither can advise
 * another path; free of imports, as the audit runs offline.
 */

export interface ReissueStep {
  id: 'mint_successor' | 'first_v4_call' | 'v2_quiet' | 'disable_v2_key';
  text: string;
  /** The exact command, where one does it. */
  command: string | null;
}

export interface ReissueFacts {
  /** The legacy key's id; a placeholder when only its scopes are known. */
  keyId: string;
  /** The dedicated non-personal user the mint creates from the key; null when the key is not known. */
  successorUser: string | null;
  /** The least capabilities for the calls made: what the successor is minted with. */
  capabilities: readonly string[];
  /** The v4 reach of the key's scopes: what the successor may get at most. */
  allowed: readonly string[];
  /** The usage window the least capabilities were computed over. */
  windowDays: number;
  /** A successor already minted and still active. */
  successor: { maskedKey: string; mintedAt: string; capabilities: readonly string[] } | null;
  /**
   * What the successor's calls still miss of the capabilities the v2 calls need: those it lacks (with
   * what its replacement holds) and those it holds unexercised; null when not known (offline).
   */
  coverage: { lacking: readonly string[]; unexercised: readonly string[] } | null;
  /** `from`: when the key is quiet if not called again; null when its calls are not known. */
  quiet: { days: number; from: string | null };
  /** What keeps calling v2 anyway: the endpoints (or scopes) without a v4 successor. */
  staysOnV2: readonly string[];
}

const mintSuccessorCommand = (keyId: string, capabilities: readonly string[], replace = false) =>
  `svc legacy-keys mint-successor ${keyId}${replace ? ' --replace' : ''} --capabilities ${capabilities.join(',')}`;

/** What replaces a successor lacking capabilities: all it holds, then those it lacks. */
export const replacementOf = <C extends string>(held: readonly C[], lacking: readonly C[]): C[] => [...new Set([...held, ...lacking])];

/** Revokes the active successor and mints one holding its capabilities and those it lacks. */
export const replaceSuccessorCommand = (keyId: string, held: readonly string[], lacking: readonly string[]) =>
  mintSuccessorCommand(keyId, replacementOf(held, lacking), true);

export const disableCommand = (keyId: string) => `svc legacy-keys disable ${keyId}`;

/** A key with no successor never goes quiet: its disable is forced, with the reason on record (one shell word). */
export const forcedDisableCommand = (keyId: string, reason: string) => `${disableCommand(keyId)} --force --reason '${reason.replaceAll("'", `'\\''`)}'`;

/** The steps in order; the plan puts its per-endpoint moves between the first v4 call and quiet. */
export function reissueSteps(facts: ReissueFacts): { mint: ReissueStep; firstCall: ReissueStep; quiet: ReissueStep; disable: ReissueStep } {
  const { keyId, successor, capabilities, coverage } = facts;
  const user = facts.successorUser === null ? 'the key’s own non-personal user' : `the non-personal user ${facts.successorUser}`;
  const lacking = successor !== null && coverage !== null && coverage.lacking.length > 0 ? coverage : null;
  const mintText = lacking
    ? `Replace the successor key ${successor!.maskedKey}: the key's v2 calls need ${lacking.lacking.join(', ')}, which it lacks; its replacement holds ${replacementOf(successor!.capabilities, lacking.lacking).join(', ')} (the form on /app/migration replaces it too); the new key is shown once`
    : successor
    ? `Successor key ${successor.maskedKey} minted on ${successor.mintedAt.slice(0, 10)} for ${user} (${successor.capabilities.join(', ')})`
    : capabilities.length > 0
      ? `Mint the successor v4 key: it creates ${user} and links the key (or use the form on /app/migration, or POST /v4/admin/legacy-keys/${keyId}/successor); the key is shown once`
      : `Mint the successor v4 key once you know its capabilities: no call with a v4 successor in the last ${facts.windowDays} days (within ${facts.allowed.join(', ')})`;
  const quietOn = facts.quiet.from === null ? '' : ` (on ${facts.quiet.from.slice(0, 10)} if not called again)`;
  return {
    mint: {
      id: 'mint_successor',
      text: mintText,
      command: lacking ? replaceSuccessorCommand(keyId, successor!.capabilities, lacking.lacking) : successor || capabilities.length === 0 ? null : mintSuccessorCommand(keyId, capabilities),
    },
    firstCall: { id: 'first_v4_call', text: coveringCallsText(capabilities, coverage), command: 'curl -sS "$BASE_URL/v4/me" -H "X-API-KEY: $V4_KEY"' },
    quiet: {
      id: 'v2_quiet',
      text: `Stop calling v2 with the legacy key: with no v2 call for ${facts.quiet.days} days it is quiet${quietOn}`,
      command: null,
    },
    disable: {
      id: 'disable_v2_key',
      text:
        facts.staysOnV2.length > 0
          ? `Disable the legacy key once the v2-only calls (${facts.staysOnV2.join(', ')}) have ended too: disabling stops them`
          : 'Disable the legacy key (or use the button on /app/migration): v2 refuses it from the next request',
      command: disableCommand(keyId),
    },
  };
}

/** The successor works once its successful calls cover what the v2 calls need; GET /v4/me checks the key but covers none. */
function coveringCallsText(capabilities: readonly string[], coverage: ReissueFacts['coverage']): string {
  if (capabilities.length === 0) return 'Make a first v4 call with the successor key: its first success shows it working';
  const missing = coverage === null ? [] : [...coverage.lacking, ...coverage.unexercised];
  return (
    `Make successful v4 calls with the successor key needing each capability the v2 calls need (${capabilities.join(', ')}): it works once they are all covered; ` +
    `GET /v4/me checks the key but covers none${missing.length > 0 ? `. Not yet covered: ${missing.join(', ')}` : ''}`
  );
}

import { describe, expect, it } from 'vitest';
import { Heard } from '../../src/store/heard.js';

/** Settles what is already resolved or rejected, so a test can tell which waits are still pending. */
async function settled(wait: Promise<void>): Promise<'heard' | 'failed' | 'waiting'> {
  return Promise.race([
    wait.then(
      () => 'heard' as const,
      () => 'failed' as const,
    ),
    new Promise<'waiting'>((resolve) => setImmediate(() => resolve('waiting'))),
  ]);
}

describe('Heard', () => {
  it('covers a moment once an answer to something sent after it came back', () => {
    const heard = new Heard();
    const before = performance.now();
    expect(heard.covers(before)).toBe(false);
    heard.roundTripAnswered(performance.now());
    expect(heard.covers(before)).toBe(true);
    expect(heard.covers(performance.now() + 1)).toBe(false);
  });

  it("counts a statement's answer only once a round trip covers the newest pooled connection's LISTEN", () => {
    const heard = new Heard();
    heard.connectionListening();
    const first = performance.now();
    // The connection may have begun listening after a commit the listener has not reported: not proof.
    heard.statementAnswered(first);
    expect(heard.covers(first)).toBe(false);
    heard.roundTripAnswered(performance.now());
    const second = performance.now();
    heard.statementAnswered(second);
    expect(heard.covers(second)).toBe(true);
    // Another connection joins: its statements prove nothing until the listener covers its LISTEN too.
    heard.connectionListening();
    const third = performance.now();
    heard.statementAnswered(third);
    expect(heard.covers(third)).toBe(false);
  });

  it('counts no statement once told they may reach backends that did not listen', () => {
    const heard = new Heard();
    heard.connectionListening();
    heard.roundTripAnswered(performance.now());
    heard.distrustStatements();
    const sent = performance.now();
    heard.statementAnswered(sent);
    expect(heard.covers(sent)).toBe(false);
    heard.roundTripAnswered(sent);
    expect(heard.covers(sent)).toBe(true);
  });

  it('resolves each wait when an answer covers it, and leaves the later ones waiting', async () => {
    const heard = new Heard();
    const early = performance.now();
    const earlyWait = heard.wait(early);
    const sent = performance.now();
    const lateWait = heard.wait(performance.now() + 1000);
    expect(heard.waiting).toBe(true);
    heard.roundTripAnswered(sent);
    expect(await settled(earlyWait)).toBe('heard');
    expect(await settled(lateWait)).toBe('waiting');
    expect(heard.waiting).toBe(true);
    heard.fail(new Error('listener lost'));
    expect(await settled(lateWait)).toBe('failed');
    expect(heard.waiting).toBe(false);
  });

  it('never moves back: an answer to something sent earlier than what is covered changes nothing', () => {
    const heard = new Heard();
    const earlier = performance.now();
    const later = earlier + 50;
    heard.roundTripAnswered(later);
    heard.roundTripAnswered(earlier);
    expect(heard.covers(later)).toBe(true);
  });
});

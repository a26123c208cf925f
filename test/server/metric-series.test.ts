import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SeriesCounter, SeriesHistogram } from '../../src/kit/metric-series.js';

const BOUNDS = [0.005, 0.01, 0.1, 1];

/** A scrape's lines, each sample's labels in name order, so two expositions compare as sets. */
async function exposition(registry: Registry): Promise<string[]> {
  const text = await registry.metrics();
  return text
    .trim()
    .split('\n')
    .map((line) =>
      line.replace(/\{([^}]*)\}/, (_, labels: string) => `{${labels.split(',').sort().join(',')}}`),
    )
    .sort();
}

describe('series metrics (plain numbers formatted at scrape time)', () => {
  it('expose the same histogram as prom-client for the same observations', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const series = new SeriesHistogram<'route' | 'status'>('t_seconds', 'test histogram', ['route', 'status'], BOUNDS, ours);
    const reference = new Histogram({ name: 't_seconds', help: 'test histogram', labelNames: ['route', 'status'], buckets: BOUNDS, registers: [theirs] });
    // On a bound, between bounds, above every bound, zero; two label sets.
    const observations: Array<[string, string, number]> = [
      ['/a', '200', 0.005],
      ['/a', '200', 0.0051],
      ['/a', '200', 0.5],
      ['/a', '200', 7],
      ['/a', '500', 0],
      ['/b', '200', 1],
      ['/b', '200', 0.02],
    ];
    for (const [route, status, value] of observations) {
      series.observe(`${route} ${status}`, () => ({ route, status }), value);
      reference.observe({ route, status }, value);
    }
    const lines = await exposition(ours);
    expect(lines).toEqual(await exposition(theirs));
    expect(lines).toContain('t_seconds_bucket{le="0.01",route="/a",status="200"} 2');
    expect(lines).toContain('t_seconds_count{route="/a",status="200"} 4');
  });

  it('expose the same counter as prom-client, and reset with the registry', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const series = new SeriesCounter<'outcome'>('t_total', 'test counter', ['outcome'], ours);
    const reference = new Counter({ name: 't_total', help: 'test counter', labelNames: ['outcome'], registers: [theirs] });
    for (const outcome of ['ok', 'ok', 'denied', 'ok']) {
      series.inc(outcome, () => ({ outcome }));
      reference.inc({ outcome });
    }
    expect(await exposition(ours)).toEqual(await exposition(theirs));
    expect(await exposition(ours)).toContain('t_total{outcome="ok"} 3');
    ours.resetMetrics();
    expect((await ours.getSingleMetric('t_total')!.get()).values).toEqual([]);
  });
});

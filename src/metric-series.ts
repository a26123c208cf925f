import type { Metric, Registry } from 'prom-client';

/*
 * Metrics written on every request, kept as plain numbers per label set and formatted by the registry
 * at scrape time. prom-client's own observe() and inc() check and hash the label object on every call:
 * 2–3 µs of a read that costs ~150 µs of CPU in all (bench/RESULTS.md, "reference"). Here the caller
 * names the series by a key it builds cheaply, and the labels are made once, when the series is new.
 */

type Labels<L extends string> = Record<L, string>;

interface HistogramSeries<L extends string> {
  labels: Labels<L>;
  /** Observations per bucket (not cumulative); the last slot is above every bound (+Inf only). */
  buckets: number[];
  sum: number;
  count: number;
}

/** The registry's view of a metric: what `getMetricsAsString` and `getSingleMetric(…).get()` read. */
interface SampleValue {
  /** A histogram's _bucket, _sum or _count; a counter's samples carry its name. */
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

abstract class RegisteredMetric {
  readonly aggregator = 'sum';
  abstract readonly type: 'counter' | 'histogram';

  constructor(
    readonly name: string,
    readonly help: string,
    registry: Registry,
  ) {
    // prom-client types a registered metric as one of its own classes; the registry itself only reads
    // name, help, type, aggregator, get() and reset().
    registry.registerMetric(this as unknown as Metric);
  }

  abstract values(): SampleValue[];
  abstract reset(): void;

  get() {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() });
  }
}

export class SeriesHistogram<L extends string> extends RegisteredMetric {
  readonly type = 'histogram';
  private readonly series = new Map<string, HistogramSeries<L>>();

  constructor(name: string, help: string, private readonly bounds: readonly number[], registry: Registry) {
    super(name, help, registry);
  }

  /** Adds `value` to the series `key`, whose labels `labelsOf` makes the first time the key is seen. */
  observe(key: string, labelsOf: () => Labels<L>, value: number): void {
    let series = this.series.get(key);
    if (!series) {
      series = { labels: labelsOf(), buckets: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    let slot = 0;
    while (slot < this.bounds.length && value > this.bounds[slot]!) slot++;
    series.buckets[slot]!++;
    series.sum += value;
    series.count++;
  }

  values(): SampleValue[] {
    const values: SampleValue[] = [];
    for (const { labels, buckets, sum, count } of this.series.values()) {
      let below = 0;
      this.bounds.forEach((bound, slot) => {
        below += buckets[slot]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: bound, ...labels }, value: below });
      });
      values.push(
        { metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels }, value: count },
        { metricName: `${this.name}_sum`, labels: { ...labels }, value: sum },
        { metricName: `${this.name}_count`, labels: { ...labels }, value: count },
      );
    }
    return values;
  }

  reset(): void {
    this.series.clear();
  }
}

export class SeriesCounter<L extends string> extends RegisteredMetric {
  readonly type = 'counter';
  private readonly series = new Map<string, { labels: Labels<L>; value: number }>();

  /** Adds one to the series `key`, whose labels `labelsOf` makes the first time the key is seen. */
  inc(key: string, labelsOf: () => Labels<L>): void {
    const series = this.series.get(key);
    if (series) series.value++;
    else this.series.set(key, { labels: labelsOf(), value: 1 });
  }

  values(): SampleValue[] {
    return [...this.series.values()].map(({ labels, value }) => ({ labels: { ...labels }, value }));
  }

  reset(): void {
    this.series.clear();
  }
}

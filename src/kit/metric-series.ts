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

/** The registry's side of a metric kept by label set: one series per key, made with its labels on first use. */
abstract class SeriesMetric<L extends string, S extends { labels: Labels<L> }> {
  readonly aggregator = 'sum';
  abstract readonly type: 'counter' | 'histogram';
  protected readonly series = new Map<string, S>();

  constructor(
    readonly name: string,
    readonly help: string,
    /** Read like a prom-client metric's (the generated metrics reference lists them). */
    readonly labelNames: readonly L[],
    registry: Registry,
  ) {
    // prom-client types a registered metric as one of its own classes; the registry itself only reads
    // name, help, type, aggregator, get() and reset().
    registry.registerMetric(this as unknown as Metric);
  }

  /** A new series' starting numbers. */
  protected abstract fresh(labels: Labels<L>): S;
  protected abstract values(): SampleValue[];

  /** The series `key`, made the first time the key is seen, with the labels `labelsOf` makes. */
  protected seriesOf(key: string, labelsOf: () => Labels<L>): S {
    let series = this.series.get(key);
    if (!series) {
      series = this.fresh(labelsOf());
      this.series.set(key, series);
    }
    return series;
  }

  get() {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() });
  }

  reset(): void {
    this.series.clear();
  }
}

export class SeriesHistogram<L extends string> extends SeriesMetric<L, HistogramSeries<L>> {
  readonly type = 'histogram';

  constructor(name: string, help: string, labelNames: readonly L[], private readonly bounds: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
  }

  protected fresh(labels: Labels<L>): HistogramSeries<L> {
    return { labels, buckets: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
  }

  /** Adds `value` to the series `key`, whose labels `labelsOf` makes the first time the key is seen. */
  observe(key: string, labelsOf: () => Labels<L>, value: number): void {
    const series = this.seriesOf(key, labelsOf);
    let slot = 0;
    while (slot < this.bounds.length && value > this.bounds[slot]!) slot++;
    series.buckets[slot]!++;
    series.sum += value;
    series.count++;
  }

  protected values(): SampleValue[] {
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
}

export class SeriesCounter<L extends string> extends SeriesMetric<L, { labels: Labels<L>; value: number }> {
  readonly type = 'counter';

  protected fresh(labels: Labels<L>) {
    return { labels, value: 0 };
  }

  /** Adds one to the series `key`, whose labels `labelsOf` makes the first time the key is seen. */
  inc(key: string, labelsOf: () => Labels<L>): void {
    this.seriesOf(key, labelsOf).value++;
  }

  protected values(): SampleValue[] {
    return [...this.series.values()].map(({ labels, value }) => ({ labels: { ...labels }, value }));
  }
}

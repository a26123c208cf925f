/**
 * The value of one series in Prometheus text, named with its labels as the registry writes them
 * (e.g. `svc_log_lines_dropped_total{reason="buffer_full"}`); undefined when the text has no such series.
 */
export function seriesValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

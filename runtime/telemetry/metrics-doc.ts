/**
 * Renders the metric table of docs/operations.md ("Metrics") from the
 * catalogue, so the page cannot drift: `npm run docs:metrics` rewrites it
 * and a test compares. The Prometheus column shows the name as the
 * OpenTelemetry Prometheus exporter writes it: characters Prometheus does
 * not allow become `_`, a counter gains `_total`, a histogram is read as
 * `_bucket`, `_sum` and `_count`.
 */
import { METRICS, type MetricDefinition } from './catalogue.ts';

export const METRICS_TABLE_BEGIN = '<!-- metric table: written by `npm run docs:metrics` from runtime/telemetry/catalogue.ts -->';
export const METRICS_TABLE_END = '<!-- end of metric table -->';

const KIND: Readonly<Record<MetricDefinition['kind'], string>> = {
  counter: 'counter',
  updown: 'up-down counter',
  'observed-counter': 'counter (observed at collection)',
  'observed-updown': 'up-down counter (observed at collection)',
  histogram: 'histogram',
  gauge: 'gauge (observed at collection)',
};

/** A metric or label name as Prometheus sees it through the exporter. */
export function prometheusName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_:]/g, '_').replace(/_{2,}/g, '_');
}

export function prometheusMetricName(def: MetricDefinition): string {
  const base = prometheusName(def.name);
  return (def.kind === 'counter' || def.kind === 'observed-counter') && !base.endsWith('_total') ? `${base}_total` : base;
}

export function renderMetricTable(): string {
  const rows = Object.values(METRICS).map((def) => {
    const labels = def.labels.length === 0 ? '—' : def.labels.map((l) => `\`${l}\``).join(', ');
    return `| \`${def.name}\` | \`${prometheusMetricName(def)}\` | ${KIND[def.kind]} | ${def.unit} | ${labels} | ${def.description}; ${def.source} |`;
  });
  return [
    METRICS_TABLE_BEGIN,
    '| metric | Prometheus | instrument | unit | labels | what it measures |',
    '|---|---|---|---|---|---|',
    ...rows,
    METRICS_TABLE_END,
  ].join('\n');
}

/** The page with its table replaced by the current one (appended under "## Metrics" when absent). */
export function withCurrentMetricTable(page: string): string {
  const begin = page.indexOf(METRICS_TABLE_BEGIN);
  const end = page.indexOf(METRICS_TABLE_END);
  if (begin < 0 || end < begin) return `${page.trimEnd()}\n\n## Metrics\n\n${renderMetricTable()}\n`;
  return page.slice(0, begin) + renderMetricTable() + page.slice(end + METRICS_TABLE_END.length);
}

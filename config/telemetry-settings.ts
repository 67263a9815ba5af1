/**
 * The effective telemetry settings, from the `Telemetry` section and the
 * standard OpenTelemetry environment variables, with the precedence
 * docs/operations.md "Telemetry" states: per setting, the configuration's
 * key when written, else its `OTEL_*` variable, else OpenTelemetry's own
 * default. Nothing is read while `Telemetry:Enabled` is false;
 * `OTEL_SDK_DISABLED=true` turns everything off.
 *
 * A variable is read only where it decides something (the Prometheus
 * variables only when Prometheus is on, a metrics variable only when
 * metrics are pushed, …), as the SDK itself reads them. A value that does
 * not parse is a refusal naming the variable, never a silent fallback; the
 * message never repeats the value (a variable may carry anything).
 *
 * Pure: startup and `check-config` both call it through
 * `loadStartupConfig` (service/startup-config.ts), so both refuse alike.
 */
import { type OtlpProtocol, type OtlpTarget, type TelemetrySettings, exportsMetrics } from '../runtime/telemetry/settings.ts';
import { listenerOnPort, portClash } from './checks/ports.ts';
import { isLoopbackHost, parseIp } from './ip-address.ts';
import { formatProblem, type Problem, problem } from './problem.ts';
import type { Config } from './schema.ts';
import { httpUrl, text } from './schema/fields.ts';

export type TelemetryResolution = {
  /** Null: nothing to install (off, disabled by OTEL_SDK_DISABLED, every exporter `none`, or refused). */
  readonly settings: TelemetrySettings | null;
  readonly problems: Problem[];
};

/** OpenTelemetry's defaults (the SDK environment specification), ours for the service name and the scrape address. */
export const TELEMETRY_DEFAULTS = {
  serviceName: 'mailcairn',
  otlpEndpoint: 'http://localhost:4318',
  protocol: 'http/protobuf' as OtlpProtocol,
  exportIntervalMs: 60_000,
  prometheusHost: '127.0.0.1',
  prometheusPort: 9464,
} as const;

const MIN_INTERVAL_MS = 100;
const MAX_INTERVAL_MS = 3_600_000;
const SECTION = 'Telemetry';

type Env = NodeJS.ProcessEnv;

/** An environment value as the SDK reads one: unset and empty (after trimming) are the same. */
function read(env: Env, variable: string): string | undefined {
  const value = env[variable]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/** A comma list of exporter names (`OTEL_METRICS_EXPORTER`, `OTEL_TRACES_EXPORTER`). */
function exporterList(env: Env, variable: string, known: readonly string[], problems: Problem[]): string[] | undefined {
  const value = read(env, variable);
  if (value === undefined) return undefined;
  const names = value.split(',').map((name) => name.trim().toLowerCase());
  const allowed = `must be a comma-separated list of ${known.join(', ')}`;
  if (names.some((name) => !known.includes(name))) {
    problems.push(problem(variable, `names an exporter this build does not have: ${allowed}`));
    return undefined;
  }
  if (names.includes('none') && names.some((name) => name !== 'none')) {
    problems.push(problem(variable, 'lists none beside another exporter: write none alone, or leave it out'));
    return undefined;
  }
  return names;
}

function protocolOf(env: Env, variable: string, problems: Problem[]): OtlpProtocol | undefined {
  const value = read(env, variable);
  if (value === undefined || value === 'http/protobuf' || value === 'http/json') return value;
  problems.push(
    problem(variable, value === 'grpc' ? 'grpc is not served by this build: use http/protobuf or http/json' : 'must be http/protobuf or http/json'),
  );
  return undefined;
}

const URL_RULES = httpUrl('an OTLP endpoint', { plain: true });

function urlOf(env: Env, variable: string, problems: Problem[]): string | undefined {
  const value = read(env, variable);
  if (value === undefined) return undefined;
  const parsed = URL_RULES.safeParse(value);
  if (parsed.success) return value;
  for (const issue of parsed.error.issues) problems.push(problem(variable, issue.message));
  return undefined;
}

function wholeNumberOf(env: Env, variable: string, min: number, max: number, problems: Problem[]): number | undefined {
  const value = read(env, variable);
  if (value === undefined) return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (Number.isSafeInteger(n) && n >= min && n <= max) return n;
  problems.push(problem(variable, `must be a whole number between ${min} and ${max}`));
  return undefined;
}

/** `/v1/metrics` after a base URL, as the SDK appends it to OTEL_EXPORTER_OTLP_ENDPOINT. */
export function signalUrl(base: string, signal: 'metrics' | 'traces'): string {
  return `${base.endsWith('/') ? base : `${base}/`}v1/${signal}`;
}

/**
 * One signal's OTLP destination: `Endpoint` (a base) when written, else the
 * signal's own variable (the whole URL), else OTEL_EXPORTER_OTLP_ENDPOINT (a
 * base), else localhost:4318; the protocol likewise.
 */
function otlpTarget(
  written: { Endpoint?: string | undefined; Protocol?: OtlpProtocol | undefined },
  signal: 'metrics' | 'traces',
  env: Env,
  problems: Problem[],
): OtlpTarget {
  const SIGNAL = signal.toUpperCase();
  let url: string;
  if (written.Endpoint !== undefined) url = signalUrl(written.Endpoint, signal);
  else {
    const specific = urlOf(env, `OTEL_EXPORTER_OTLP_${SIGNAL}_ENDPOINT`, problems);
    const general = specific === undefined ? urlOf(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', problems) : undefined;
    url = specific ?? signalUrl(general ?? TELEMETRY_DEFAULTS.otlpEndpoint, signal);
  }
  const protocol =
    written.Protocol ??
    protocolOf(env, `OTEL_EXPORTER_OTLP_${SIGNAL}_PROTOCOL`, problems) ??
    protocolOf(env, 'OTEL_EXPORTER_OTLP_PROTOCOL', problems) ??
    TELEMETRY_DEFAULTS.protocol;
  return { url, protocol };
}

/** `OTEL_EXPORTER_PROMETHEUS_HOST`: an IP address, or `localhost` (the loopback IPv4 address, where the default listens). */
function prometheusHostOf(env: Env, problems: Problem[]): string | undefined {
  const variable = 'OTEL_EXPORTER_PROMETHEUS_HOST';
  const value = read(env, variable);
  if (value === undefined) return undefined;
  if (value.toLowerCase() === 'localhost') return TELEMETRY_DEFAULTS.prometheusHost;
  if (parseIp(value) !== null) return value;
  problems.push(problem(variable, 'must be an IP address to listen on (0.0.0.0 for every IPv4 address, :: for every address) or localhost'));
  return undefined;
}

function prometheusOf(config: Config, env: Env, listed: readonly string[], problems: Problem[]): TelemetrySettings['metrics']['prometheus'] {
  const written = config.Telemetry.Metrics.Prometheus;
  if (!(written.Enabled ?? listed.includes('prometheus'))) return null;
  const host = written.Host ?? prometheusHostOf(env, problems) ?? TELEMETRY_DEFAULTS.prometheusHost;
  const fromEnv = written.Port === undefined ? wholeNumberOf(env, 'OTEL_EXPORTER_PROMETHEUS_PORT', 0, 65535, problems) : undefined;
  const port = written.Port ?? fromEnv ?? TELEMETRY_DEFAULTS.prometheusPort;
  const clash = listenerOnPort(config, port);
  if (clash !== undefined) {
    const setting = fromEnv !== undefined ? 'OTEL_EXPORTER_PROMETHEUS_PORT' : `${SECTION}:Metrics:Prometheus:Port`;
    problems.push(problem(setting, portClash(port, clash)));
  }
  return { host, port };
}

function metricsOtlpOf(config: Config, env: Env, listed: readonly string[], problems: Problem[]): TelemetrySettings['metrics']['otlp'] {
  const written = config.Telemetry.Metrics.Otlp;
  if (!(written.Enabled ?? listed.includes('otlp'))) return null;
  const intervalMs =
    written.ExportInterval ??
    wholeNumberOf(env, 'OTEL_METRIC_EXPORT_INTERVAL', MIN_INTERVAL_MS, MAX_INTERVAL_MS, problems) ??
    TELEMETRY_DEFAULTS.exportIntervalMs;
  return { ...otlpTarget(written, 'metrics', env, problems), intervalMs };
}

function serviceNameOf(config: Config, env: Env, problems: Problem[]): string {
  if (config.Telemetry.ServiceName !== undefined) return config.Telemetry.ServiceName;
  const value = read(env, 'OTEL_SERVICE_NAME');
  if (value === undefined) return TELEMETRY_DEFAULTS.serviceName;
  const parsed = text('service name', 128).safeParse(value);
  if (parsed.success) return parsed.data;
  problems.push(problem('OTEL_SERVICE_NAME', 'must be at most 128 characters'));
  return TELEMETRY_DEFAULTS.serviceName;
}

/**
 * @example resolveTelemetry(config, process.env).settings?.metrics.prometheus // { host: '127.0.0.1', port: 9464 }
 */
export function resolveTelemetry(config: Config, env: Env): TelemetryResolution {
  if (!config.Telemetry.Enabled) return { settings: null, problems: [] };
  const problems: Problem[] = [];
  const disabled = read(env, 'OTEL_SDK_DISABLED')?.toLowerCase();
  if (disabled === 'true') return { settings: null, problems: [] };
  if (disabled !== undefined && disabled !== 'false') return { settings: null, problems: [problem('OTEL_SDK_DISABLED', 'must be true or false')] };

  const metricsListed = exporterList(env, 'OTEL_METRICS_EXPORTER', ['otlp', 'prometheus', 'none'], problems) ?? ['otlp'];
  const tracesListed = exporterList(env, 'OTEL_TRACES_EXPORTER', ['otlp', 'none'], problems) ?? ['otlp'];
  const serviceName = serviceNameOf(config, env, problems);
  const prometheus = prometheusOf(config, env, metricsListed, problems);
  const otlp = metricsOtlpOf(config, env, metricsListed, problems);
  const traces = config.Telemetry.Traces.Otlp;
  const tracesOtlp = (traces.Enabled ?? tracesListed.includes('otlp')) ? otlpTarget(traces, 'traces', env, problems) : null;
  // The general OTLP variables serve both signals: one refusal each.
  if (problems.length > 0) return { settings: null, problems: [...new Map(problems.map((p) => [formatProblem(p), p])).values()] };
  const settings: TelemetrySettings = { serviceName, metrics: { prometheus, otlp }, traces: { otlp: tracesOtlp } };
  return { settings: exportsMetrics(settings) || tracesOtlp !== null ? settings : null, problems: [] };
}

/** The posture line: what is exported where (an OTLP URL by its origin and path; it carries no secret once user information is refused). */
export function telemetryLine(config: Config, settings: TelemetrySettings | null): string {
  if (!config.Telemetry.Enabled) return 'Telemetry: off (no OpenTelemetry SDK is loaded)';
  if (settings === null) return 'Telemetry: enabled, nothing to export (OTEL_SDK_DISABLED, or every exporter none)';
  const parts: string[] = [];
  const { prometheus, otlp } = settings.metrics;
  if (prometheus !== null) {
    const where = `${prometheus.host.includes(':') ? `[${prometheus.host}]` : prometheus.host}:${prometheus.port}`;
    parts.push(`metrics scraped at http://${where}/metrics${isLoopbackHost(prometheus.host) ? '' : ' (not loopback: no credential guards it)'}`);
  }
  if (otlp !== null) parts.push(`metrics pushed to ${otlp.url} (${otlp.protocol}) every ${otlp.intervalMs} ms`);
  if (settings.traces.otlp !== null) parts.push(`spans pushed to ${settings.traces.otlp.url} (${settings.traces.otlp.protocol})`);
  return `Telemetry (service.name ${settings.serviceName}): ${parts.join('; ')}`;
}

/**
 * The effective telemetry settings (config/telemetry-settings.ts): per
 * setting, the configuration's key when written, else its OTEL_* variable,
 * else OpenTelemetry's default; nothing read while Telemetry:Enabled is
 * false; OTEL_SDK_DISABLED; `none`; a bad variable refused by name; and a
 * scrape port clashing with another listener refused. The same refusals
 * reach check-config and startup (test/service/check-config.test.ts,
 * test/integration/telemetry-sdk.test.ts).
 */
import t from 'tap';
import { validateConfig } from '../../config/load.ts';
import { formatProblem } from '../../config/problem.ts';
import type { Config } from '../../config/schema.ts';
import { resolveTelemetry, telemetryLine } from '../../config/telemetry-settings.ts';
import { problemLines } from './fixtures.ts';

function config(telemetry: Record<string, unknown>, rest: Record<string, unknown> = {}): Config {
  const result = validateConfig({ Telemetry: { Enabled: true, ...telemetry }, ...rest });
  if (!result.ok) throw new Error(result.problems.map(formatProblem).join('\n'));
  return result.config;
}

const settingsOf = (telemetry: Record<string, unknown>, env: NodeJS.ProcessEnv = {}, rest: Record<string, unknown> = {}) => {
  const resolved = resolveTelemetry(config(telemetry, rest), env);
  if (resolved.problems.length > 0) throw new Error(resolved.problems.map(formatProblem).join('\n'));
  return resolved.settings;
};
const refusals = (telemetry: Record<string, unknown>, env: NodeJS.ProcessEnv, rest: Record<string, unknown> = {}): string[] => {
  const resolved = resolveTelemetry(config(telemetry, rest), env);
  if (resolved.settings !== null) throw new Error('a refusal installs nothing');
  return resolved.problems.map(formatProblem);
};

t.test('Enabled false: nothing, whatever the environment says', (t) => {
  const off = validateConfig({});
  if (!off.ok) throw new Error('defaults refused');
  t.same(resolveTelemetry(off.config, { OTEL_METRICS_EXPORTER: 'bogus', OTEL_SDK_DISABLED: 'maybe', OTEL_EXPORTER_OTLP_ENDPOINT: 'nope' }), {
    settings: null,
    problems: [],
  });
  t.equal(telemetryLine(off.config, null), 'Telemetry: off (no OpenTelemetry SDK is loaded)');
  t.end();
});

t.test("Enabled alone: OpenTelemetry's defaults (OTLP metrics and traces to localhost:4318, protobuf, 60 s; no Prometheus)", (t) => {
  t.same(settingsOf({}), {
    serviceName: 'mailcairn',
    metrics: { prometheus: null, otlp: { url: 'http://localhost:4318/v1/metrics', protocol: 'http/protobuf', intervalMs: 60_000 } },
    traces: { otlp: { url: 'http://localhost:4318/v1/traces', protocol: 'http/protobuf' } },
  });
  t.end();
});

t.test('every variable applies where the configuration leaves the key out', (t) => {
  const env = {
    OTEL_SERVICE_NAME: 'mail-east',
    OTEL_METRICS_EXPORTER: 'prometheus, otlp',
    OTEL_EXPORTER_PROMETHEUS_HOST: '0.0.0.0',
    OTEL_EXPORTER_PROMETHEUS_PORT: '9999',
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/base/',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_METRIC_EXPORT_INTERVAL: '15000',
  };
  t.same(settingsOf({}, env), {
    serviceName: 'mail-east',
    metrics: { prometheus: { host: '0.0.0.0', port: 9999 }, otlp: { url: 'http://collector:4318/base/v1/metrics', protocol: 'http/json', intervalMs: 15_000 } },
    traces: { otlp: { url: 'http://collector:4318/base/v1/traces', protocol: 'http/json' } },
  });
  t.end();
});

t.test('a signal-specific variable beats the general one, and is the whole URL (nothing appended)', (t) => {
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318',
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://metrics.example.org/ingest',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.org/otlp/v1/traces',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
  };
  const s = settingsOf({}, env);
  t.same(s?.metrics.otlp, { url: 'https://metrics.example.org/ingest', protocol: 'http/protobuf', intervalMs: 60_000 });
  t.same(s?.traces.otlp, { url: 'https://traces.example.org/otlp/v1/traces', protocol: 'http/json' });
  t.same(
    settingsOf({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: '' })?.metrics.otlp?.url,
    'http://general:4318/v1/metrics',
    'empty is unset',
  );
  t.end();
});

t.test('a written key beats its variable, key by key', (t) => {
  const env = {
    OTEL_SERVICE_NAME: 'from-env',
    OTEL_METRICS_EXPORTER: 'none',
    OTEL_TRACES_EXPORTER: 'none',
    OTEL_EXPORTER_PROMETHEUS_HOST: '0.0.0.0',
    OTEL_EXPORTER_PROMETHEUS_PORT: '9999',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318',
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://specific:4318/m',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_METRIC_EXPORT_INTERVAL: '1000',
  };
  const s = settingsOf(
    {
      ServiceName: 'from-config',
      Metrics: {
        Prometheus: { Enabled: true, Port: 9465 },
        Otlp: { Enabled: true, Endpoint: 'http://collector.internal:4318', ExportInterval: '00:00:30' },
      },
      Traces: { Otlp: { Enabled: true, Protocol: 'http/protobuf' } },
    },
    env,
  );
  t.same(s, {
    serviceName: 'from-config',
    // Host not written: the variable; Port written: the key.
    metrics: {
      prometheus: { host: '0.0.0.0', port: 9465 },
      // Endpoint written (a base): /v1/metrics appended, the specific variable ignored; Protocol not written: the variable.
      otlp: { url: 'http://collector.internal:4318/v1/metrics', protocol: 'http/json', intervalMs: 30_000 },
    },
    // Endpoint not written: the general variable; Protocol written.
    traces: { otlp: { url: 'http://general:4318/v1/traces', protocol: 'http/protobuf' } },
  });
  t.end();
});

t.test('an exporter switched off in the configuration stays off whatever the variable lists', (t) => {
  const s = settingsOf(
    { Metrics: { Prometheus: { Enabled: false }, Otlp: { Enabled: false } }, Traces: { Otlp: { Enabled: true } } },
    { OTEL_METRICS_EXPORTER: 'prometheus,otlp', OTEL_EXPORTER_PROMETHEUS_PORT: 'not read when off' },
  );
  t.same(s?.metrics, { prometheus: null, otlp: null });
  t.ok(s?.traces.otlp);
  t.end();
});

t.test('none: no exporter of that signal; both none: nothing to install', (t) => {
  const metricsNone = settingsOf({}, { OTEL_METRICS_EXPORTER: 'none' });
  t.same(metricsNone?.metrics, { prometheus: null, otlp: null });
  t.ok(metricsNone?.traces.otlp, 'traces still go');
  t.same(settingsOf({}, { OTEL_TRACES_EXPORTER: 'none' })?.traces, { otlp: null });
  t.equal(settingsOf({}, { OTEL_METRICS_EXPORTER: 'none', OTEL_TRACES_EXPORTER: 'none' }), null);
  t.equal(telemetryLine(config({}), null), 'Telemetry: enabled, nothing to export (OTEL_SDK_DISABLED, or every exporter none)');
  t.same(
    settingsOf({}, { OTEL_METRICS_EXPORTER: 'PROMETHEUS' })?.metrics,
    { prometheus: { host: '127.0.0.1', port: 9464 }, otlp: null },
    'names are read case-insensitively',
  );
  t.end();
});

t.test('OTEL_SDK_DISABLED=true turns everything off, even what the configuration writes; other values than true/false are refused', (t) => {
  const written = { Metrics: { Prometheus: { Enabled: true } }, Traces: { Otlp: { Enabled: true } } };
  t.same(resolveTelemetry(config(written), { OTEL_SDK_DISABLED: 'TRUE', OTEL_METRICS_EXPORTER: 'bogus' }), { settings: null, problems: [] });
  t.ok(settingsOf(written, { OTEL_SDK_DISABLED: 'false' }));
  t.ok(settingsOf(written, { OTEL_SDK_DISABLED: '' }), 'empty is unset');
  t.same(refusals(written, { OTEL_SDK_DISABLED: 'yes' }), ['OTEL_SDK_DISABLED: must be true or false']);
  t.end();
});

t.test('a variable that does not parse is a refusal naming it, never its value', (t) => {
  const cases: Array<[NodeJS.ProcessEnv, string]> = [
    [
      { OTEL_METRICS_EXPORTER: 'console' },
      'OTEL_METRICS_EXPORTER: names an exporter this build does not have: must be a comma-separated list of otlp, prometheus, none',
    ],
    [{ OTEL_METRICS_EXPORTER: 'none,otlp' }, 'OTEL_METRICS_EXPORTER: lists none beside another exporter: write none alone, or leave it out'],
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER: names an exporter this build does not have: must be a comma-separated list of otlp, none'],
    [{ OTEL_TRACES_EXPORTER: 'prometheus' }, 'OTEL_TRACES_EXPORTER: names an exporter this build does not have: must be a comma-separated list of otlp, none'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not served by this build: use http/protobuf or http/json'],
    [{ OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'protobuf' }, 'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: must be http/protobuf or http/json'],
    [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'json' }, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: must be http/protobuf or http/json'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http or https URL'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector' }, 'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http or https URL'],
    [{ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'not a url' }, 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: must be an absolute URL (https://host/path)'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://user:hunter2@collector/v1/traces' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must not carry user information'],
    [{ OTEL_METRIC_EXPORT_INTERVAL: '60s' }, 'OTEL_METRIC_EXPORT_INTERVAL: must be a whole number between 100 and 3600000'],
    [{ OTEL_METRIC_EXPORT_INTERVAL: '50' }, 'OTEL_METRIC_EXPORT_INTERVAL: must be a whole number between 100 and 3600000'],
    [{ OTEL_SERVICE_NAME: 'x'.repeat(129) }, 'OTEL_SERVICE_NAME: must be at most 128 characters'],
    [
      { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: '70000' },
      'OTEL_EXPORTER_PROMETHEUS_PORT: must be a whole number between 0 and 65535',
    ],
    [
      { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: '94x4' },
      'OTEL_EXPORTER_PROMETHEUS_PORT: must be a whole number between 0 and 65535',
    ],
    [
      { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_HOST: 'metrics.example.org' },
      'OTEL_EXPORTER_PROMETHEUS_HOST: must be an IP address to listen on (0.0.0.0 for every IPv4 address, :: for every address) or localhost',
    ],
  ];
  for (const [env, line] of cases) {
    const lines = refusals({}, env);
    t.same(lines, [line], Object.keys(env).join(' '));
    t.notMatch(lines.join('\n'), /hunter2|console|zipkin|collector:4318|60s/, 'the value is not repeated');
  }
  t.same(
    refusals({}, { OTEL_METRICS_EXPORTER: 'console', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }).map((line) => line.split(':')[0]),
    ['OTEL_METRICS_EXPORTER', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'],
    'every bad variable is reported together',
  );
  t.end();
});

t.test('a variable is read only where it decides something', (t) => {
  // Prometheus off: its variables are not read. Metrics not pushed: the interval is not read.
  t.ok(settingsOf({}, { OTEL_EXPORTER_PROMETHEUS_PORT: 'junk', OTEL_EXPORTER_PROMETHEUS_HOST: 'junk' }));
  t.ok(settingsOf({ Metrics: { Otlp: { Enabled: false } } }, { OTEL_METRIC_EXPORT_INTERVAL: 'junk', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'junk' }));
  // A written key hides its variable.
  t.ok(settingsOf({ Traces: { Otlp: { Endpoint: 'http://127.0.0.1:4318' } } }, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'junk', OTEL_METRICS_EXPORTER: 'none' }));
  t.end();
});

t.test('OTEL_EXPORTER_PROMETHEUS_HOST=localhost listens on the loopback IPv4 address', (t) => {
  t.same(settingsOf({}, { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_HOST: 'localhost' })?.metrics.prometheus, {
    host: '127.0.0.1',
    port: 9464,
  });
  t.end();
});

t.test('a scrape port another listener binds is refused, naming where the port came from', (t) => {
  t.same(refusals({ Metrics: { Prometheus: { Enabled: true, Port: 8081 } } }, {}), [
    'Telemetry:Metrics:Prometheus:Port: port 8081 is also bound by HealthEndpoints (HealthEndpoints:Port); two listeners of the process cannot share a port',
  ]);
  t.same(refusals({}, { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: '8080' }, { McpEndpoint: { Enabled: true } }), [
    'OTEL_EXPORTER_PROMETHEUS_PORT: port 8080 is also bound by McpEndpoint (McpEndpoint:Port); two listeners of the process cannot share a port',
  ]);
  t.same(
    refusals({ Metrics: { Prometheus: { Enabled: true } } }, {}, { HealthEndpoints: { Port: 9464 } }),
    ['Telemetry:Metrics:Prometheus:Port: port 9464 is also bound by HealthEndpoints (HealthEndpoints:Port); two listeners of the process cannot share a port'],
    'the default port clashes too',
  );
  t.ok(settingsOf({ Metrics: { Prometheus: { Enabled: true, Port: 0 } } }, {}, { HealthEndpoints: { Port: 0 } }), 'port 0 (any free port) never clashes');
  t.ok(
    settingsOf({ Metrics: { Prometheus: { Enabled: true, Port: 8081 } } }, {}, { HealthEndpoints: { Enabled: false } }),
    'a disabled listener binds nothing',
  );
  t.end();
});

t.test('the schema refuses what an operator would not mean', (t) => {
  const lines = problemLines({
    Telemetry: {
      Enabled: true,
      Metrics: {
        Prometheus: { Host: 'localhost', Port: 65536 },
        Otlp: { Endpoint: 'collector:4318', Protocol: 'grpc', ExportInterval: '60s' },
      },
      Traces: { Otlp: { Endpoint: 'https://user:secret@collector/' } },
    },
  });
  t.same(lines, [
    'Telemetry:Metrics:Prometheus:Host: must be an IP address (0.0.0.0 for every IPv4 address, :: for every address)',
    'Telemetry:Metrics:Prometheus:Port: must be between 0 and 65535 (was 65536)',
    'Telemetry:Metrics:Otlp:Endpoint: must be an http or https URL',
    'Telemetry:Metrics:Otlp:Protocol: must be one of http/protobuf, http/json',
    'Telemetry:Metrics:Otlp:ExportInterval: must be a time span written hh:mm:ss, with an optional day count in front (e.g. 00:01:00 or 1.00:00:00)',
    'Telemetry:Traces:Otlp:Endpoint: must not carry user information',
  ]);
  t.same(problemLines({ Telemetry: { Enabled: true, Metrics: { Otlp: { Endpoint: 'http://collector:4318/?token=x' } } } }), [
    'Telemetry:Metrics:Otlp:Endpoint: must not carry a query or fragment',
  ]);
  t.end();
});

t.test('the posture line says what goes where', (t) => {
  const c = config({ ServiceName: 'mc', Metrics: { Prometheus: { Enabled: true, Host: '0.0.0.0', Port: 9464 }, Otlp: { Enabled: false } } });
  t.equal(
    telemetryLine(c, resolveTelemetry(c, {}).settings),
    'Telemetry (service.name mc): metrics scraped at http://0.0.0.0:9464/metrics (not loopback: no credential guards it); spans pushed to http://localhost:4318/v1/traces (http/protobuf)',
  );
  t.end();
});

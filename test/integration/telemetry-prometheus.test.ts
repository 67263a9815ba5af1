/**
 * Issue 31: metrics an operator's Prometheus scrapes, read back through
 * Prometheus itself. The Debian Prometheus (test/harness/prometheus.ts)
 * starts first and scrapes the daemon's `/metrics` every second while the
 * real `mailcairnd` (Telemetry on, Prometheus listener on a loopback port,
 * nothing else exported) mirrors a private Dovecot account. Then, through
 * Prometheus's query API:
 * - `mailcairn_mailbox_messages` per account and folder equals what the
 *   mailbox holds (and what the mirror stored);
 * - a refused MCP call (a tool the credential's grant withholds) and a
 *   refused admin route (a permission the key lacks) each raise
 *   `service_authorization_refusals_total` by exactly one, with the surface,
 *   the tool or route template, and the permission as labels;
 * - an actor crash (a real SQLite error in the contacts actor's handler,
 *   test/helpers/telemetry-daemon.ts `fault`) raises
 *   `mailcairn_supervisor_restarts_total` for that actor and reason, as many
 *   times as the supervisor logged a restart;
 * - the HTTP duration histogram carries route templates and statuses.
 */
import t from 'tap';
import { METRICS } from '../../runtime/telemetry/catalogue.ts';
import { exposedName, type Prometheus, type Sample, SCRAPE_JOB, startPrometheus } from '../harness/prometheus.ts';
import { reservePort } from '../helpers/ports.ts';
import { ACCOUNT, CONTACT, startTelemetryDaemon } from '../helpers/telemetry-daemon.ts';

t.setTimeout(300_000);

const MESSAGES = exposedName(METRICS.mailboxMessages);
const REFUSALS = exposedName(METRICS.authorizationRefusals);
const RESTARTS = exposedName(METRICS.supervisorRestarts);
const REQUESTS = exposedName(METRICS.httpServerDuration, 'count');

const MCP_REFUSAL = `${REFUSALS}{surface="mcp",target="create_contact",permission="service.mail.contacts.write"}`;
const ADMIN_REFUSAL = `${REFUSALS}{surface="admin",target="GET /api/admin/outbox/{id}",permission="service.admin.audit.read"}`;

/** The one value of a query answering at most one sample; 0 when the series does not exist (yet). */
async function currentValue(prometheus: Prometheus, promql: string): Promise<number> {
  const samples = await prometheus.query(promql);
  if (samples.length > 1) throw new Error(`${promql} answered ${samples.length} series`);
  return samples[0]?.value ?? 0;
}

const one = (value: number) => (s: Sample[]) => s.length === 1 && s[0]!.value === value;

t.test('Prometheus scrapes the daemon during a mirror and reads back what happened', async (t) => {
  const metricsPort = await reservePort();
  const prometheus = await startPrometheus({ target: `http://127.0.0.1:${metricsPort}/metrics` });
  t.teardown(() => prometheus.stop());

  const served = await startTelemetryDaemon(t, {
    telemetry: {
      Enabled: true,
      Metrics: { Prometheus: { Enabled: true, Host: '127.0.0.1', Port: metricsPort }, Otlp: { Enabled: false } },
      Traces: { Otlp: { Enabled: false } },
    },
    fault: 'asserted-contacts',
  });
  await prometheus.waitFor(`up{job="${SCRAPE_JOB}"}`, one(1), 60_000);

  await t.test('messages stored per account and folder equal the mailbox', async (t) => {
    await served.waitMirrored();
    for (const alias of ['inbox', 'archive'] as const) {
      const query = `${MESSAGES}{mailcairn_account="${ACCOUNT}",mailcairn_folder="${alias}"}`;
      await prometheus.waitFor(query, one(served.placed[alias]), 60_000);
      t.pass(`${alias}: ${served.placed[alias]} messages, as placed in Dovecot`);
      t.equal(served.mirrored(alias), served.placed[alias], `${alias}: and as the mirror holds`);
    }
    const series = await prometheus.query(`${MESSAGES}{mailcairn_account="${ACCOUNT}"}`);
    t.same(series.map((s) => s.labels.mailcairn_folder).sort(), ['archive', 'inbox'], 'one series per configured folder, by its alias');
  });

  await t.test('a refused tool call and a refused admin route count once each, labelled', async (t) => {
    t.equal(await currentValue(prometheus, MCP_REFUSAL), 0, 'no MCP refusal before');
    t.equal(await currentValue(prometheus, ADMIN_REFUSAL), 0, 'no admin refusal before');
    const mailonly = await served.mcp('mailonly');
    t.equal(
      await mailonly.callRefused('create_contact', { name: CONTACT.name, addresses: [{ address: CONTACT.address }] }),
      -32602,
      'withheld: read as unknown',
    );
    const admin = await served.admin('/api/admin/outbox/o-4711', 'reader');
    t.equal(admin.status, 403);

    await prometheus.waitFor(MCP_REFUSAL, one(1));
    await prometheus.waitFor(ADMIN_REFUSAL, one(1));
    // Several scrapes later, still one each: counted once per refusal, not once per stage.
    await new Promise((r) => setTimeout(r, 3_000));
    t.equal(await currentValue(prometheus, MCP_REFUSAL), 1, 'the MCP refusal counted once');
    t.equal(await currentValue(prometheus, ADMIN_REFUSAL), 1, 'the admin refusal counted once');
    t.equal(await currentValue(prometheus, `sum(${REFUSALS})`), 2, 'and nothing else was counted as a refusal');

    t.equal(await mailonly.callRefused('create_contact', { name: CONTACT.name, addresses: [{ address: CONTACT.address }] }), -32602);
    await prometheus.waitFor(MCP_REFUSAL, one(2));
    t.equal(await currentValue(prometheus, ADMIN_REFUSAL), 1, 'the admin series did not move');
  });

  await t.test('an actor crash raises the restart counter of that actor and reason', async (t) => {
    const restarts = `${RESTARTS}{mailcairn_actor="contacts",mailcairn_reason="E_ACTOR_CRASHED"}`;
    t.equal(await currentValue(prometheus, restarts), 0, 'no restart before');
    const agent = await served.mcp('agent');
    const result = await agent.call('create_contact', { name: CONTACT.name, addresses: [{ address: CONTACT.address }] });
    t.match(result, { isError: true, structuredContent: { code: 54001 } }, 'the crash reaches the caller as an undiagnosed failure');
    await prometheus.waitFor(restarts, one(1), 60_000);
    const logged = () => served.daemon.lines().filter((l) => l.event === 'actor.restart');
    t.equal(logged().filter((l) => l.actor === 'contacts').length, 1, 'the supervisor logged the one restart');
    await prometheus.waitFor(`sum(${RESTARTS})`, (s) => (s[0]?.value ?? 0) === logged().length);
    t.pass('every restart the supervisor logged is counted, and nothing more');
  });

  await t.test('HTTP durations by surface, route template and status', async (t) => {
    const admin403 = `${REQUESTS}{mailcairn_surface="admin",http_request_method="GET",http_route="/api/admin/outbox/{id}",http_response_status_code="403"}`;
    await prometheus.waitFor(admin403, one(1));
    t.pass('the refused admin request, by its route template');
    const mcp = await prometheus.waitFor(
      `sum(${REQUESTS}{mailcairn_surface="mcp",http_request_method="POST",http_route="/mcp"})`,
      (s) => (s[0]?.value ?? 0) >= 3,
    );
    t.ok(mcp[0]!.value >= 3, 'the MCP requests, by /mcp');
  });
});

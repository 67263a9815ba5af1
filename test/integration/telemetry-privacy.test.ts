/**
 * Issue 31: no label, span name or attribute holds an address, a subject, a
 * query, a message id, a capability or a credential. The real `mailcairnd`
 * runs with everything exported at once: the Prometheus listener (scraped by
 * the Debian Prometheus), OTLP metrics and OTLP traces (protobuf) to the
 * loopback receiver. The run touches every kind of secret on purpose, through
 * the official MCP client and the admin API:
 * - mirrors generated mail plus one message of ours (subjects, addresses,
 *   Message-IDs: telemetry-daemon.ts `secrets`);
 * - searches with a query text, lists with an address and a subject
 *   fragment as filters, reads the message (storedEmailId, thread id),
 *   downloads its attachment by its capability link and tries a forged one;
 * - creates and reads a contact (a name, an address, a note), is refused a
 *   tool with those arguments, and asks the admin API for a contact by
 *   address, for the contact by id, and (refused) for an outbox entry by id;
 * - every API key of the configuration.
 * Then every label name and value Prometheus holds (`/api/v1/series`), the
 * raw `/metrics` text, every OTLP metric name and point attribute and every
 * span's name, attributes, events, status message and resource are scanned:
 * none contains any of those strings. The scan is shown to have reached
 * what it should: the configured identifiers and the route templates
 * (`/attachments/{capability}`) are there.
 */
import t from 'tap';
import { METRICS } from '../../runtime/telemetry/catalogue.ts';
import { exposedName, startPrometheus } from '../harness/prometheus.ts';
import { exportedStrings, type ReceivedMetric, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { reservePort } from '../helpers/ports.ts';
import { ACCOUNT, CONTACT, OWN_FROM, OWN_SUBJECT, QUERY_TEXT, startTelemetryDaemon } from '../helpers/telemetry-daemon.ts';

t.setTimeout(300_000);

type Found = { where: string; text: string };

function metricStrings(metric: ReceivedMetric): string[] {
  const out = [metric.name, metric.description];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object')
      for (const [k, inner] of Object.entries(v)) {
        out.push(k);
        walk(inner);
      }
  };
  for (const p of metric.points) walk(p.attributes);
  walk(metric.resource);
  return out;
}

t.test('no secret of the run reaches a label, a span name or an attribute', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const metricsPort = await reservePort();
  const prometheus = await startPrometheus({ target: `http://127.0.0.1:${metricsPort}/metrics` });
  t.teardown(() => prometheus.stop());

  const served = await startTelemetryDaemon(t, {
    telemetry: {
      Enabled: true,
      Metrics: {
        Prometheus: { Enabled: true, Host: '127.0.0.1', Port: metricsPort },
        Otlp: { Enabled: true, Endpoint: receiver.url, Protocol: 'http/protobuf' },
      },
      Traces: { Otlp: { Enabled: true, Endpoint: receiver.url, Protocol: 'http/protobuf' } },
    },
    // The metric interval from the standard variable (no ExportInterval written); spans within a fraction of a second.
    env: { OTEL_METRIC_EXPORT_INTERVAL: '1000', OTEL_BSP_SCHEDULE_DELAY: '200' },
    counts: { inbox: 20, archive: 5 },
  });
  const secrets = served.secrets;
  await served.waitMirrored();
  const agent = await served.mcp('agent');
  const mailonly = await served.mcp('mailonly');

  // Search until the derivation has indexed our message (the mirror may be ahead of the index).
  type Match = { storedEmailId: string; threadId?: string; subject?: string };
  let own: Match | undefined;
  for (const end = Date.now() + 60_000; own === undefined; ) {
    const found = await agent.call('search_emails', { queryText: QUERY_TEXT });
    own = (found.structuredContent as { matches?: Match[] } | undefined)?.matches?.find((m) => m.subject === OWN_SUBJECT);
    if (own === undefined) {
      if (Date.now() > end) throw new Error(`search never found our message: ${JSON.stringify(found)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  secrets.add(own.storedEmailId);
  if (own.threadId) secrets.add(own.threadId);

  const listed = await agent.call('list_emails', { senderAddress: OWN_FROM, subjectFragment: 'Zephyrquill invoice' });
  t.notOk(listed.isError, 'list_emails with an address and a subject fragment');

  const content = await agent.call('get_email_content', { storedEmailIds: [own.storedEmailId] });
  const email = (content.structuredContent as { emails: Array<{ attachments?: Array<{ downloadUrl?: string }> }> }).emails[0]!;
  const downloadUrl = email.attachments?.find((a) => a.downloadUrl)?.downloadUrl;
  t.ok(downloadUrl, 'the attachment comes with a capability link');
  const capability = new URL(downloadUrl!).pathname.split('/').pop()!;
  secrets.add(capability);
  const download = await fetch(downloadUrl!);
  t.equal(download.status, 200, 'the attachment downloads by its capability');
  await download.arrayBuffer();
  const forged = `${capability.slice(0, -4)}AAAA`;
  secrets.add(forged);
  const refusedDownload = await fetch(new URL(`/attachments/${forged}`, downloadUrl));
  t.equal(refusedDownload.status, 404, 'a forged capability is 404');
  await refusedDownload.arrayBuffer();

  const created = await agent.call('create_contact', { name: CONTACT.name, addresses: [{ address: CONTACT.address }], note: CONTACT.note });
  t.notOk(created.isError, 'create_contact');
  const contactId = (created.structuredContent as { contact: { id: string } }).contact.id;
  t.notOk((await agent.call('get_contact', { contactId })).isError, 'get_contact');
  t.equal(await mailonly.callRefused('create_contact', { name: CONTACT.name, addresses: [{ address: CONTACT.address }] }), -32602, 'refused');
  t.equal((await served.admin(`/api/admin/contacts/by-address?address=${encodeURIComponent(CONTACT.address)}`, 'operator')).status, 200);
  t.equal((await served.admin(`/api/admin/contacts/${contactId}`, 'operator')).status, 200);
  const outboxId = `o-${OWN_FROM}`;
  secrets.add(outboxId);
  t.equal((await served.admin(`/api/admin/outbox/${encodeURIComponent(outboxId)}`, 'reader')).status, 403);

  // Everything above has been exported: the attachment route's span and series, a metrics push with the mailbox gauge.
  await receiver.waitForSpans((s) => s.some((span) => span.name.includes('/attachments/{capability}')), 60_000, 'the attachment request span');
  await prometheus.waitFor(`${exposedName(METRICS.httpServerDuration, 'count')}{http_route="/attachments/{capability}"}`, (s) => s.length >= 1, 60_000);
  for (const end = Date.now() + 60_000; !receiver.metrics().some((m) => m.name === METRICS.mailboxMessages.name); ) {
    if (Date.now() > end) throw new Error('no OTLP metrics export carried mailcairn.mailbox.messages');
    await new Promise((r) => setTimeout(r, 250));
  }
  const exposition = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  t.match((await served.stop()).code, 0, 'stopped cleanly (and flushed)');

  const found: Found[] = [];
  for (const labels of await prometheus.series())
    for (const [name, value] of Object.entries(labels)) found.push({ where: `prometheus series ${labels.__name__}`, text: `${name}=${value}` });
  found.push({ where: 'the /metrics exposition', text: exposition });
  for (const metric of receiver.metrics()) for (const text of metricStrings(metric)) found.push({ where: `OTLP metric ${metric.name}`, text });
  for (const span of receiver.spans()) for (const text of exportedStrings(span)) found.push({ where: `span ${span.name}`, text });

  const scanned = found.map((f) => f.text).join('\n');
  t.ok(scanned.includes(`mailcairn_account="${ACCOUNT}"`) || scanned.includes(`mailcairn_account=${ACCOUNT}`), 'the scan saw the account id label');
  t.ok(scanned.includes('/attachments/{capability}'), 'the scan saw the attachment route template');
  t.ok(scanned.includes('/api/admin/outbox/{id}'), 'the scan saw the admin route template');
  t.ok(receiver.spans().length > 0 && receiver.metrics().length > 0, 'spans and OTLP metrics were scanned');

  const leaks = [...secrets]
    .filter((s) => s.length >= 6)
    .flatMap((secret) => found.filter((f) => f.text.includes(secret)).map((f) => `${f.where}: ${JSON.stringify(secret)}`));
  t.same(leaks, [], `none of ${secrets.size} secrets of the run in ${found.length} exported strings`);
});

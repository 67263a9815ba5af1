/**
 * Output and confirmations without a deployment: colour only on a terminal
 * and never with NO_COLOR or TERM=dumb; JSON readings; guidance on standard
 * error; a confirmation refused with piped input and no --yes, granted by
 * --yes; a secret taken from piped input as exactly one line.
 */
import { PassThrough } from 'node:stream';
import t from 'tap';
import { confirm } from '../../cli/confirm.ts';
import { colourOn, createOutput } from '../../cli/output.ts';
import { readSecret } from '../../cli/standard-input.ts';

function capture(isTTY: boolean): { write(s: string): boolean; isTTY: boolean; text: string } {
  return {
    isTTY,
    text: '',
    write(s: string) {
      this.text += s;
      return true;
    },
  };
}

t.test('colour', async (t) => {
  t.ok(colourOn({ write: () => true, isTTY: true }, {}), 'a terminal');
  t.notOk(colourOn({ write: () => true, isTTY: false }, {}), 'redirected');
  t.notOk(colourOn({ write: () => true, isTTY: true }, { NO_COLOR: '1' }), 'NO_COLOR');
  t.notOk(colourOn({ write: () => true, isTTY: true }, { NO_COLOR: '' }), 'NO_COLOR set to nothing still counts');
  t.notOk(colourOn({ write: () => true, isTTY: true }, { TERM: 'dumb' }), 'TERM=dumb');
  const tty = { stdout: capture(true), stderr: capture(true) };
  const out = createOutput('table', tty, {});
  out.reading({}, () => out.table(['A', 'B'], [['1', '2']]));
  t.match(tty.stdout.text, /\u001b\[1m/, 'the header is emphasized on a terminal');
  const piped = { stdout: capture(false), stderr: capture(false) };
  const plain = createOutput('table', piped, {});
  plain.reading({}, () => plain.table(['A', 'B'], [['1', '22']]));
  plain.warn('careful');
  t.equal(piped.stdout.text, 'A  B\n1  22\n');
  t.equal(piped.stderr.text, 'Warning: careful\n');
});

t.test('JSON readings', async (t) => {
  const streams = { stdout: capture(false), stderr: capture(false) };
  const out = createOutput('json', streams, {});
  out.reading({ a: 1 }, () => 'human');
  out.line('only for people');
  out.note('guidance');
  t.same(JSON.parse(streams.stdout.text), { a: 1 });
  t.equal(streams.stderr.text, 'guidance\n');
});

t.test('confirmations and piped secrets', async (t) => {
  const piped = (text: string): PassThrough => {
    const stream = new PassThrough();
    stream.end(text);
    return stream;
  };
  const stderr = new PassThrough();
  await t.rejects(confirm({ stdin: piped('yes\n'), stderr }, 'Go?', { yes: false }), /piped input never answers one; pass --yes/);
  await t.resolves(confirm({ stdin: piped(''), stderr }, 'Go?', { yes: true }));
  t.equal(await readSecret({ stdin: piped('mc_key\r\n'), stderr }, 'API key', ''), 'mc_key');
  await t.rejects(readSecret({ stdin: piped('one\ntwo\n'), stderr }, 'API key', ''), /more than one line/);
  await t.rejects(readSecret({ stdin: piped('\n'), stderr }, 'API key', ''), /No API key arrived/);
});

t.test('watched readings and running totals', async (t) => {
  const value = { completed: 1 };
  const human = (): string => 'line one\nline two';
  const line = (): string => 'one line';

  const piped = { stdout: capture(false), stderr: capture(false) };
  const plain = createOutput('table', piped, {});
  plain.refresh(value, human, line);
  plain.refresh(value, human, line);
  t.equal(piped.stdout.text, 'one line\none line\n', 'not a terminal: one line per refresh');

  const json = { stdout: capture(true), stderr: capture(true) };
  const asJson = createOutput('json', json, {});
  asJson.refresh(value, human, line);
  asJson.refresh({ completed: 2 }, human, line);
  t.same(
    json.stdout.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
    [{ completed: 1 }, { completed: 2 }],
    'JSON: one document per line per refresh, on a terminal too',
  );

  const tty = { stdout: { ...capture(true), columns: 5 }, stderr: capture(true) };
  const drawn = createOutput('table', tty, {});
  drawn.refresh(value, human, line);
  drawn.refresh(value, human, line);
  // "line one" and "line two" wrap on a 5-column terminal: 4 rows to go back over.
  t.equal(tty.stdout.text, 'line one\nline two\n\u001b[4F\u001b[Jline one\nline two\n', 'a terminal: redrawn over the previous refresh');

  const totals = { stdout: capture(true), stderr: capture(true) };
  const running = createOutput('table', totals, {});
  running.progress('Erased 250');
  running.progress('Erased 500');
  running.error('stopped');
  t.equal(
    totals.stderr.text,
    '\r\u001b[2KErased 250\r\u001b[2KErased 500\n\u001b[31mmailcairn:\u001b[0m stopped\n',
    'a terminal: rewritten in place, closed before the next line',
  );
  const notes = { stdout: capture(false), stderr: capture(false) };
  const lines = createOutput('table', notes, {});
  lines.progress('Erased 250');
  lines.progress('Erased 500');
  t.equal(notes.stderr.text, 'Erased 250\nErased 500\n', 'not a terminal: a line each');
});

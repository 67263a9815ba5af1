/**
 * notmuch as the search peer, run as its user runs it: one `notmuch` process
 * per query (spawn, config, opening the Xapian database, the query, output),
 * against the Maildir that `mbsync` pulled and `notmuch new` indexed
 * (peers/mbsync.ts). notmuch's own query time, without the process, is
 * measured by a small C probe linked to libnotmuch (built at run time with
 * the system C compiler; the notmuch package ships the library but no header,
 * so the few functions used are declared here): the database opened once,
 * then per query what `notmuch search --output=messages --limit=N` does —
 * parse, search newest first, read the first N message ids.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export type NotmuchRun = { wallMs: number; stdout: string };

export function notmuchEnv(config: string): NodeJS.ProcessEnv {
  return { ...process.env, NOTMUCH_CONFIG: config };
}

/** One `notmuch` process: wall time from spawn to exit, with its standard output. */
export async function runNotmuch(args: string[], env: NodeJS.ProcessEnv): Promise<NotmuchRun> {
  return runCommand('notmuch', args, env);
}

export async function runCommand(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<NotmuchRun> {
  const started = performance.now();
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const out: Buffer[] = [];
  let err = '';
  child.stdout!.on('data', (d: Buffer) => out.push(d));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  const wallMs = performance.now() - started;
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${code}: ${err.slice(0, 500)}`);
  return { wallMs, stdout: Buffer.concat(out).toString('utf8') };
}

/** `notmuch count <query>`: messages matching. */
export async function notmuchCount(query: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { stdout } = await runNotmuch(['count', '--output=messages', query], env);
  return Number(stdout.trim());
}

const PROBE_SOURCE = String.raw`#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef struct nm nm;
extern int notmuch_database_open_with_config(const char *, int, const char *, const char *, nm **, char **);
extern nm *notmuch_query_create(nm *, const char *);
extern void notmuch_query_set_sort(nm *, int);
extern int notmuch_query_search_messages(nm *, nm **);
extern int notmuch_messages_valid(nm *);
extern nm *notmuch_messages_get(nm *);
extern void notmuch_messages_move_to_next(nm *);
extern const char *notmuch_message_get_message_id(nm *);
extern void notmuch_message_destroy(nm *);
extern void notmuch_query_destroy(nm *);
extern int notmuch_database_destroy(nm *);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(int argc, char **argv) {
  if (argc != 6) { fprintf(stderr, "usage: probe config limit warmup iterations query\n"); return 2; }
  int limit = atoi(argv[2]), warmup = atoi(argv[3]), n = atoi(argv[4]);
  nm *db; char *err = NULL;
  /* 0: NOTMUCH_DATABASE_MODE_READ_ONLY */
  if (notmuch_database_open_with_config(NULL, 0, argv[1], NULL, &db, &err)) { fprintf(stderr, "open: %s\n", err ? err : "?"); return 1; }
  for (int i = 0; i < warmup + n; i++) {
    double t0 = now();
    nm *q = notmuch_query_create(db, argv[5]);
    notmuch_query_set_sort(q, 1); /* NOTMUCH_SORT_NEWEST_FIRST, the CLI's default */
    nm *msgs;
    if (notmuch_query_search_messages(q, &msgs)) { fprintf(stderr, "search failed\n"); return 1; }
    int got = 0; size_t sink = 0;
    for (; got < limit && notmuch_messages_valid(msgs); notmuch_messages_move_to_next(msgs)) {
      nm *m = notmuch_messages_get(msgs);
      for (const char *id = notmuch_message_get_message_id(m); *id; id++) sink += (unsigned char)*id;
      notmuch_message_destroy(m);
      got++;
    }
    notmuch_query_destroy(q);
    if (i >= warmup) printf("%.4f %d %zu\n", now() - t0, got, sink & 1);
  }
  notmuch_database_destroy(db);
  return 0;
}
`;

/** Build the libnotmuch probe in `dir`; null (with the reason) when there is no C compiler or no libnotmuch.so.5. */
export async function buildNotmuchProbe(dir: string): Promise<{ probe: string } | { probe: null; reason: string }> {
  const source = join(dir, 'notmuch-probe.c');
  const probe = join(dir, 'notmuch-probe');
  writeFileSync(source, PROBE_SOURCE);
  try {
    await runCommand('cc', ['-O2', '-o', probe, source, '-l:libnotmuch.so.5']);
    return { probe };
  } catch (err) {
    return { probe: null, reason: (err as Error).message.slice(0, 200) };
  }
}

/** Per-query milliseconds inside one process, after `warmup` unmeasured runs; `returned` is what the last run read. */
export async function probeNotmuch(
  probe: string,
  config: string,
  query: string,
  o: { limit: number; warmup: number; iterations: number },
): Promise<{ samples: number[]; returned: number }> {
  const { stdout } = await runCommand(probe, [config, String(o.limit), String(o.warmup), String(o.iterations), query]);
  const lines = stdout
    .trim()
    .split('\n')
    .map((l) => l.split(' '));
  return { samples: lines.map((l) => Number(l[0])), returned: Number(lines[lines.length - 1]?.[1] ?? 0) };
}

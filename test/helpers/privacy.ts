/** What must never reach a log line: strings of the mail a test placed, to search captured logs for. */

/** Header values worth searching the logs for: subjects and addresses of the messages, long enough to be specific. */
export function sensitiveStrings(raws: readonly Buffer[]): string[] {
  const found = new Set<string>();
  for (const raw of raws) {
    const head = raw.subarray(0, Math.min(raw.length, 16_384)).toString('latin1');
    for (const m of head.matchAll(/^(?:Subject|From|To):[ \t]*([^\r\n]{8,120})/gim)) found.add(m[1]!.trim());
    for (const m of head.matchAll(/[\w.+-]{3,}@[\w-]+(?:\.[\w-]+)+/g)) found.add(m[0]);
  }
  return [...found].filter((s) => s.length >= 8);
}

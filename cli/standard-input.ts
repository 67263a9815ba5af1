/**
 * Reading from standard input: one secret (an API key, a refresh token),
 * never echoed, and yes/no answers, which only a terminal may give
 * (docs/cli.md "Confirmations and output": piped input never answers a
 * question).
 *
 * A secret is never taken from an argument, where the shell history and the
 * process list would keep it. On a terminal it is typed with echo off; from
 * a pipe it is the whole input, which must be exactly one line.
 */
import { createInterface } from 'node:readline/promises';
import { CliFailure, EXIT } from './failure.ts';

export type Input = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(mode: boolean): unknown };
export type Terminal = { stdin: Input; stderr: NodeJS.WritableStream & { isTTY?: boolean } };

/** More than any key or token; past it the input is not one credential. */
const MAX_SECRET_BYTES = 64 * 1024;

export function isTerminal(stdin: Input): boolean {
  return stdin.isTTY === true && typeof stdin.setRawMode === 'function';
}

async function readPiped(stdin: Input, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > MAX_SECRET_BYTES) throw new CliFailure(`Standard input holds more than one ${what}; send exactly one, on one line.`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function readHidden(io: Terminal, prompt: string): Promise<string> {
  const { stdin, stderr } = io;
  // Echo off before the prompt shows: a key typed (or pasted) the moment the prompt appears must not be echoed.
  stdin.setRawMode!(true);
  stdin.resume();
  stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = (error: CliFailure | null): void => {
      stdin.removeListener('data', onData);
      stdin.setRawMode!(false);
      stdin.pause();
      stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: Buffer | string): void => {
      for (const char of chunk.toString()) {
        if (char === '\r' || char === '\n' || char === '\u0004') return finish(null);
        if (char === '\u0003') return finish(new CliFailure('Interrupted; nothing was sent.', EXIT.interrupted));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    stdin.on('data', onData);
  });
}

/** One secret: typed unseen on a terminal, or the single line piped in. */
export async function readSecret(io: Terminal, what: string, prompt: string): Promise<string> {
  const text = isTerminal(io.stdin) ? await readHidden(io, prompt) : await readPiped(io.stdin, what);
  const secret = text.trim();
  if (secret === '') throw new CliFailure(`No ${what} arrived on standard input; type it when asked, or pipe it in (one line).`);
  if (/[\r\n]/.test(secret)) throw new CliFailure(`Standard input holds more than one line; send exactly one ${what}.`);
  return secret;
}

/** A yes/no question on standard error, answered on the terminal; anything but y/yes is no. */
export async function askYesNo(io: Terminal, question: string): Promise<boolean> {
  const lines = createInterface({ input: io.stdin, output: io.stderr, terminal: true });
  try {
    const answer = await lines.question(`${question} [y/N] `);
    return /^(y|yes)$/i.test(answer.trim());
  } finally {
    lines.close();
  }
}

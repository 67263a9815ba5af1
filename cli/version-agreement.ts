/**
 * The version agreement (docs/cli.md "Versions"), judged from the
 * session report before every command:
 * - different major.minor: refused, nothing more is sent, because a minor
 *   release may change the administrative contract;
 * - same line, different build (a patch apart, another commit): the command
 *   runs with a warning;
 * - a build that cannot be compared (`+unstamped`, no build part) or a
 *   version that cannot be read at all: the command runs, and the agreement
 *   is reported unchecked.
 *
 * Two readable release lines that differ are refused even when a build is
 * unstamped: the line alone says the contract may differ.
 */

type Parsed = { line: string; release: string; build: string | null };

const VERSION = /^(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(?:\+([0-9A-Za-z.-]+))?$/;

function parse(text: string): Parsed | null {
  const m = VERSION.exec(text);
  if (!m) return null;
  const build = m[5] === undefined || m[5] === 'unstamped' ? null : m[5];
  return { line: `${m[1]}.${m[2]}`, release: `${m[1]}.${m[2]}.${m[3]}${m[4] ?? ''}`, build };
}

export type Agreement =
  | { kind: 'same' }
  | { kind: 'other-build'; message: string }
  | { kind: 'unchecked'; message: string }
  | { kind: 'other-line'; message: string };

export function judgeAgreement(client: string, deployment: string, endpoint: string): Agreement {
  const ours = parse(client);
  const theirs = parse(deployment);
  const versions = `${endpoint} runs ${deployment} and this client is ${client}`;
  if (ours === null || theirs === null) {
    return {
      kind: 'unchecked',
      message: `The version agreement with ${endpoint} is unchecked: ${ours === null ? "this client's" : "the deployment's"} version cannot be read (${versions}).`,
    };
  }
  if (ours.line !== theirs.line) {
    return {
      kind: 'other-line',
      message: `The command was refused rather than sent to a deployment from another release line: ${versions}. Use a ${theirs.line}.x client for this deployment.`,
    };
  }
  if (ours.build === null || theirs.build === null) {
    return {
      kind: 'unchecked',
      message: `The version agreement with ${endpoint} is unchecked: ${ours.build === null ? 'this client' : 'the deployment'} is an unstamped build (${versions}).`,
    };
  }
  if (ours.release !== theirs.release || ours.build !== theirs.build) {
    return { kind: 'other-build', message: `${versions}: not the same build and problems may occur.` };
  }
  return { kind: 'same' };
}

/**
 * Every code of the error table through the MCP mapping (tool-result.ts
 * `toolFailure`), unit by unit: a code with a public number a client is told
 * is an `isError` result naming that number with the error's sentence; any
 * other (an internal code, E_INTERNAL, the chat provider's log-only
 * 71001–73001) is the undiagnosed 54001 with the table's sentence and a
 * trace id, and nothing of the error's own message. The surfaces driven for
 * real are test/http/error-surfaces.test.ts.
 */
import t from 'tap';
import { toolFailure } from '../../../http/mcp/tool-result.ts';
import { AppError, codeNames, Codes, type Code } from '../../../runtime/errors.ts';

/** What the spec fixes, written out rather than read from the table (agent-surface "Errors"; DECISIONS.md). */
const PINNED: Partial<Record<Code, number>> = {
  E_APP_REFUSED: 14001,
  E_TOOL_INVALID_INPUT: 51001,
  E_TOOL_RESULT_LIMIT: 51003,
  E_CURSOR_INVALID: 52001,
  E_NOT_FOUND: 53001,
  E_INTERNAL: 54001,
  E_ASK_FAILED: 54001,
  E_CONTENT_DAMAGED: 55001,
  E_ASK_UNAVAILABLE: 56001,
  E_BUDGET_SPENT: 57001,
  E_STATE_PASSED: 58001,
  // Logged under their own numbers; the client sees 54001.
  E_LLM_CREDENTIAL_REFUSED: 54001,
  E_LLM_NO_ANSWER: 54001,
  E_LLM_NO_TEXT: 54001,
  // Internal: undiagnosed to an agent.
  E_ACTOR_TIMEOUT: 54001,
  E_ACTOR_DOWN: 54001,
  E_STORE_UNAVAILABLE: 54001,
  E_HTTP_BAD_REQUEST: 54001,
  E_CHANGE_REFUSED: 54001,
};

const MARKER = 'alice@example.org';

t.test('every code: a told refusal with its public number, or the undiagnosed 54001', async (t) => {
  for (const code of codeNames) {
    const row: { public: number | null; undiagnosed?: true } = Codes[code];
    const sentence = `The ${code} sentence (${MARKER}).`;
    const failure = toolFailure(new AppError(code, { message: sentence }), () => 'trace-1');
    const told = row.public !== null && row.undiagnosed !== true;
    if (told) {
      t.same(
        failure,
        {
          kind: 'refused',
          code: row.public,
          result: {
            isError: true,
            content: [{ type: 'text', text: `Mailcairn error ${row.public}: ${sentence}` }],
            structuredContent: { code: row.public, message: sentence },
          },
        },
        `${code}: told as ${row.public}`,
      );
    } else {
      const message = 'Something went wrong; the reason is in the server log (trace trace-1)';
      t.same(
        failure,
        {
          kind: 'undiagnosed',
          code: 54001,
          traceId: 'trace-1',
          result: {
            isError: true,
            content: [{ type: 'text', text: `Mailcairn error 54001: ${message}` }],
            structuredContent: { code: 54001, message, traceId: 'trace-1' },
          },
        },
        `${code}: undiagnosed`,
      );
      t.notOk(JSON.stringify(failure).includes(MARKER), `${code}: its message stays in the log`);
    }
    const pinned = PINNED[code];
    if (pinned !== undefined) t.equal(failure.code, pinned, `${code}: ${pinned} as the spec fixes it`);
  }
});

t.test('14001 names the permission that would have sufficed, and nothing else', async (t) => {
  const failure = toolFailure(new AppError('E_APP_REFUSED', { details: { permission: 'service.mail.send', account: 'pat' } }), () => 'x');
  t.same(failure.result.structuredContent, { code: 14001, message: Codes.E_APP_REFUSED.msg, permission: 'service.mail.send' });
});

t.test('anything but an AppError is undiagnosed, and a trace id is drawn only then', async (t) => {
  let drawn = 0;
  const next = (): string => `trace-${++drawn}`;
  t.equal(toolFailure(new AppError('E_NOT_FOUND'), next).kind, 'refused');
  t.equal(drawn, 0, 'a refusal needs no trace id');
  const failure = toolFailure(new Error(`Subject: quarterly numbers for ${MARKER}`), next);
  t.match(failure, { kind: 'undiagnosed', code: 54001, traceId: 'trace-1' });
  t.notOk(JSON.stringify(failure).includes(MARKER));
});

/**
 * `Answering`: chat endpoints `ask_mail` runs its conversation against, by
 * alias (the alias is what the answering audit records), and the bounds on
 * what questions may cost. The spec names the behaviour (deadline, cost
 * bound, period allowance, audit); key names are ours. `ask_mail` uses the
 * first endpoint; no endpoint means questions are not answered
 * (docs/ask-mail.md).
 */
import { z } from 'zod';
import { flag, httpUrl, list, slug, text, wholeNumber } from './fields.ts';
import { secretRef } from './secret-ref.ts';
import { timeSpan } from './time-span.ts';

export const ChatEndpoint = z
  .strictObject({
    Alias: slug('Name of the endpoint in the answering audit; unique'),
    BaseAddress: httpUrl('OpenAI-compatible base address (/v1/chat/completions); clear text only to a loopback host', {
      https: 'unless-loopback',
    }),
    Model: text('Chat model'),
    ApiKey: secretRef('Provider API key, by reference').optional(),
    Deadline: timeSpan('00:00:01', '00:10:00', 'How long one call to the endpoint may take').prefault('00:01:00'),
    MaxCallsPerQuestion: wholeNumber(1, 50, 'Calls one question may make (cost bound)').default(8),
    MaxInputCharactersPerQuestion: wholeNumber(1_000, 10_000_000, 'Characters one question may send (cost bound)').default(200_000),
  })
  .meta({ description: 'A chat endpoint' });

export const AnsweringAudit = z
  .strictObject({
    Enabled: flag('Whether each run is recorded in the answering audit (which messages were read and cited; never the question or the answer)').default(true),
    Retention: timeSpan('1.00:00:00', '3650.00:00:00', 'How long an audit entry is kept').prefault('90.00:00:00'),
  })
  .meta({ description: 'The answering audit (GET /api/admin/answering/audit)' });

export const Answering = z
  .strictObject({
    Endpoints: list(ChatEndpoint, 'Chat endpoints by alias; ask_mail uses the first').default([]),
    MaxQuestionsPerPeriod: wholeNumber(1, 1_000_000, 'Questions answered per period (durable across restarts); further ones are refused with 57001').default(
      200,
    ),
    Period: timeSpan('00:01:00', '31.00:00:00', 'Length of the question allowance period').prefault('1.00:00:00'),
    PassagesPerLookup: wholeNumber(1, 10, 'Messages one lookup of the model passes on to it (cost bound)').default(5),
    CharactersPerPassage: wholeNumber(200, 20_000, 'Characters of one message passed to the model per lookup (cost bound)').default(1_500),
    Audit: AnsweringAudit.prefault({}),
  })
  .meta({ description: 'Questions over mail, ask_mail (key names ours)' });

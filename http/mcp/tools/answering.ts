/**
 * `ask_mail` (category `answering`, permission `service.mail.ask`): one
 * question answered from the mailbox by the answering actor, with the
 * messages it read as citations (docs/ask-mail.md). Listed only while the
 * deployment can answer (`offered`); a caller granted it who calls while it
 * is withheld gets 56001 from the actor, saying whether no questions are
 * answered at all or answers are impossible right now.
 *
 * Annotations: read-only (it changes no mailbox), not idempotent (each call
 * is a new run that takes from the period's allowance), and open-world,
 * since the question and extracts of mail leave for the chat endpoint.
 */
import { AskMailInput } from '../../../actors/answering/protocol.ts';
import { defineTool, type Tool } from '../tool.ts';

export const answeringTools: readonly Tool[] = [
  defineTool({
    name: 'ask_mail',
    title: 'Ask about mail',
    description:
      'Answers a question from the mailbox in one call: a model searches the mail and answers with citations (every email it read, with cited true where the answer rests on it). Costs a model run; use search_emails for plain lookups.',
    category: 'answering',
    permission: 'service.mail.ask',
    annotations: { title: 'Ask about mail', readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    input: AskMailInput,
    offered: async (ctx) => (await ctx.answering.availability()).state === 'offered',
    run: (input, ctx) => ctx.answering.ask(input),
  }),
];

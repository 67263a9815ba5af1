/**
 * `contact delete --id` and `contact delete-collected`: the two irreversible
 * contact commands (admin-surface.md "Contact routes" 4; client rule 1).
 *
 * Each reads first and prints what will go on standard output: for one
 * contact its identifier, origin and address count; for the collected
 * side the contacts and addresses of the first listing page (200 at most:
 * there is no count route, and the client does not walk the whole book to
 * count it; more behind that page is said as "at least"). Then the question
 * on standard error, which only `--yes` or a terminal answers; redirected
 * input without `--yes` is refused and nothing is erased.
 *
 * Neither prints a name, an address or a note: the readings are the
 * identity and counts, as the routes' answers are. When the reading finds
 * nothing to erase, nothing is sent and the command succeeds: an
 * identifier not held yet could be given to a new contact before a DELETE
 * sent anyway, and a collected contact could be collected meanwhile.
 * Both need `service.admin.audit.read` (the reading) and
 * `service.admin.erase`.
 */
import type { Sade } from 'sade';
import { read } from '../answers.ts';
import { confirm } from '../confirm.ts';
import { withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { CliFailure, unchanged } from '../failure.ts';
import { flag, type Options } from '../options.ts';
import { COLLECTED, CONTACTS, ContactListingAnswer, EraseAnswer, EraseCollectedAnswer, contactIdOf, contactPath, readContact } from './contact-view.ts';
import type { Run } from './run.ts';

/** The listing's largest page: what the reading before `delete-collected` counts. */
const COUNTED_PAGE = 200;

const YES = '--yes';

async function deleteOne(ctx: Context, options: Options): Promise<void> {
  const id = contactIdOf(options);
  const yes = flag(options, 'yes');
  await withConnection(ctx, async ({ client }) => {
    let held;
    try {
      held = readContact(await client.get(contactPath(id)), client.endpoint, `GET ${CONTACTS}/{id}`);
    } catch (err) {
      if (!(err instanceof CliFailure && err.status === 404)) throw err;
      // The same document the route answers when it holds nothing by that identifier.
      ctx.out.reading({ id, found: false, contacts: 0, addresses: 0 }, () => `The book holds no contact ${id}; nothing was erased.`);
      return;
    }
    const count = held.addresses.length;
    const what = `contact ${id} (${held.origin}, ${count} address${count === 1 ? '' : 'es'})`;
    ctx.out.line(`Erasing ${what} removes the person and everything derived from them, the collected records of their addresses included.`);
    await confirm(ctx.io, `Erase ${what} and everything derived from them? This cannot be undone.`, { yes, flag: YES });
    const answer = await unchanged(client.delete(contactPath(id)), 'Nothing was erased.');
    const erased = read(EraseAnswer, answer, client.endpoint, `DELETE ${CONTACTS}/{id}`);
    ctx.out.reading(answer, () =>
      erased.found === false
        ? `The book no longer held contact ${id} (erased meanwhile); nothing was erased.`
        : `Erased contact ${erased.id}: ${erased.contacts} contact record(s) with ${erased.addresses} address(es).`,
    );
  });
}

async function deleteCollected(ctx: Context, options: Options): Promise<void> {
  const yes = flag(options, 'yes');
  await withConnection(ctx, async ({ client }) => {
    const page = read(
      ContactListingAnswer,
      await client.get(CONTACTS, { origin: 'Collected', pageSize: String(COUNTED_PAGE) }),
      client.endpoint,
      `GET ${CONTACTS}`,
    );
    const contacts = page.contacts.length;
    if (contacts === 0) {
      ctx.out.reading({ contacts: 0, addresses: 0 }, () => 'The book holds no collected contact; nothing was erased.');
      return;
    }
    const addresses = page.contacts.reduce((sum, c) => sum + c.addresses.length, 0);
    const more = Boolean(page.nextCursor);
    const held = more
      ? `at least ${contacts} collected contacts with at least ${addresses} addresses (more follow; the erasure's answer gives the whole count)`
      : `${contacts} collected contact(s) with ${addresses} address(es)`;
    ctx.out.line(`The book holds ${held}. Erasing them keeps every asserted contact.`);
    await confirm(
      ctx.io,
      `Erase every collected contact (${more ? 'at least ' : ''}${contacts} now)? This cannot be undone; mail arriving later is collected again.`,
      { yes, flag: YES },
    );
    const answer = await unchanged(client.delete(COLLECTED), 'Nothing was erased.');
    const erased = read(EraseCollectedAnswer, answer, client.endpoint, `DELETE ${COLLECTED}`);
    ctx.out.reading(answer, () => `Erased ${erased.contacts} collected contact(s) with ${erased.addresses} address(es); every asserted contact stays.`);
  });
}

export function registerContactErasure(program: Sade, run: Run): void {
  program
    .command('contact delete')
    .describe('Erase one person and everything derived from them. Irreversible: shows the identity and address count, then asks.')
    .option('--id', 'Contact identifier, such as c12 (contact list prints them)')
    .option('--yes', 'Agree without being asked (needed when standard input is not a terminal)')
    .action(run((ctx, options) => deleteOne(ctx, options)));
  program
    .command('contact delete-collected')
    .describe('Erase every collected contact and keep the asserted ones. Irreversible: shows the counts, then asks.')
    .option('--yes', 'Agree without being asked (needed when standard input is not a terminal)')
    .action(run((ctx, options) => deleteCollected(ctx, options)));
}

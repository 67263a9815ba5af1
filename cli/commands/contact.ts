/**
 * `contact create | show | list | update | add-address | remove-address |
 * promote | export` (docs/cli.md "Contacts"; admin-surface.md "Contact
 * routes"); the erasures are contact-erase.ts.
 *
 * These commands exist to show contacts, so they print names, addresses
 * and notes, on standard output only. Their failures quote none of them.
 *
 * Amendments state the whole record: `update`, `add-address` and
 * `remove-address` read the contact, change what the options state, and
 * PUT the whole record (contact-record.ts). Nothing locks the contact in
 * between: an edit made by someone else after the read is overwritten
 * (last writer wins), and a contact erased after the read is answered as
 * one the book does not hold. A collected contact is refused before any
 * write: it must be promoted first.
 */
import type { Sade } from 'sade';
import { read } from '../answers.ts';
import { withConnection } from '../connection.ts';
import type { Context } from '../context.ts';
import { CliFailure, unchanged, usage } from '../failure.ts';
import { optionalInteger, optionalText, type Options } from '../options.ts';
import { registerContactErasure } from './contact-erase.ts';
import { createdRecord, updatedRecord, withAddedAddresses, withoutAddresses, type RecordBody } from './contact-record.ts';
import {
  BY_ADDRESS,
  ByAddressAnswer,
  CONTACTS,
  ContactListingAnswer,
  ExportAnswer,
  addressesOf,
  contactIdOf,
  contactLines,
  contactPath,
  contactsLines,
  noteChangeOf,
  preferredAddress,
  preferredOf,
  printable,
  readContact,
  type ContactAnswer,
} from './contact-view.ts';
import type { Run } from './run.ts';

const ORIGINS = ['Asserted', 'Collected'] as const;

async function create(ctx: Context, options: Options): Promise<void> {
  const body = createdRecord({
    name: optionalText(options, 'name'),
    addresses: addressesOf(options),
    preferred: preferredOf(options),
    note: optionalText(options, 'note'),
  });
  await withConnection(ctx, async ({ client }) => {
    const answer = await unchanged(client.post(CONTACTS, body), 'Nothing was recorded.');
    const contact = readContact(answer, client.endpoint, `POST ${CONTACTS}`);
    ctx.out.reading(answer, () => contactLines(ctx, contact));
  });
}

async function show(ctx: Context, options: Options): Promise<void> {
  const hasId = options.id !== undefined;
  const address = optionalText(options, 'address');
  if (hasId === (address !== undefined)) throw usage('Give exactly one of --id and --address.');
  if (hasId) {
    const id = contactIdOf(options);
    await withConnection(ctx, async ({ client }) => {
      const answer = await client.get(contactPath(id));
      const contact = readContact(answer, client.endpoint, `GET ${CONTACTS}/{id}`);
      ctx.out.reading(answer, () => contactLines(ctx, contact));
    });
    return;
  }
  await withConnection(ctx, async ({ client }) => {
    const answer = read(ByAddressAnswer, await client.get(BY_ADDRESS, { address }), client.endpoint, `GET ${BY_ADDRESS}`);
    if (answer.contacts.length === 0) {
      // JSON readers get the empty answer; either way it is a lookup that found nothing (exit 1), and the sentence quotes no address.
      if (ctx.out.format === 'json') ctx.out.reading(answer, () => '');
      throw new CliFailure('No contact of the book holds that address.');
    }
    ctx.out.reading(answer, () => contactsLines(ctx, answer.contacts));
  });
}

async function list(ctx: Context, options: Options): Promise<void> {
  const origin = optionalText(options, 'origin');
  if (origin !== undefined && !(ORIGINS as readonly string[]).includes(origin)) throw usage('--origin takes Asserted or Collected.');
  const pageSize = optionalInteger(options, 'page-size', 1, 1_000_000);
  const query = { origin, pageSize: pageSize === undefined ? undefined : String(pageSize), cursor: optionalText(options, 'cursor') };
  await withConnection(ctx, async ({ client }) => {
    const page = read(ContactListingAnswer, await client.get(CONTACTS, query), client.endpoint, `GET ${CONTACTS}`);
    ctx.out.reading(page, () =>
      page.contacts.length === 0
        ? 'No contact matches.'
        : ctx.out.table(
            ['CONTACT', 'ORIGIN', 'NAME', 'PREFERRED ADDRESS', 'ADDRESSES', 'AMENDED AT'],
            page.contacts.map((c) => [c.id, c.origin, printable(c.name), preferredAddress(c), String(c.addresses.length), c.amendedAt]),
          ),
    );
    if (page.nextCursor && ctx.out.format === 'table') ctx.out.note(`More contacts follow: add --cursor ${page.nextCursor} (with the same --origin).`);
  });
}

/** Read, change, PUT the whole record; the amended contact is the reading. */
async function amend(ctx: Context, id: string, change: (contact: ContactAnswer) => RecordBody): Promise<void> {
  await withConnection(ctx, async ({ client }) => {
    const current = readContact(await client.get(contactPath(id)), client.endpoint, `GET ${CONTACTS}/{id}`);
    if (current.origin !== 'Asserted') {
      throw new CliFailure(
        `Contact ${id} is a collected contact, which cannot be amended in place: promote it first (mailcairn contact promote --id ${id}). Nothing was changed.`,
      );
    }
    const answer = await unchanged(client.put(contactPath(id), change(current)), 'Nothing was changed.');
    const contact = readContact(answer, client.endpoint, `PUT ${CONTACTS}/{id}`);
    ctx.out.reading(answer, () => contactLines(ctx, contact));
  });
}

async function update(ctx: Context, options: Options): Promise<void> {
  const id = contactIdOf(options);
  const input = { name: optionalText(options, 'name'), note: noteChangeOf(options), preferred: preferredOf(options), addresses: addressesOf(options) };
  if (input.name === undefined && input.note === undefined && input.preferred === undefined && input.addresses.length === 0) {
    throw usage('Nothing to change: give --name, --note, --clear-note, --preferred or --address.');
  }
  await amend(ctx, id, (contact) => updatedRecord(contact, input));
}

async function addAddress(ctx: Context, options: Options): Promise<void> {
  const id = contactIdOf(options);
  const added = addressesOf(options);
  const preferred = preferredOf(options);
  if (added.length === 0) throw usage('--address <address> is required (repeat it for several).');
  await amend(ctx, id, (contact) => withAddedAddresses(contact, added, preferred));
}

async function removeAddress(ctx: Context, options: Options): Promise<void> {
  const id = contactIdOf(options);
  const removed = addressesOf(options);
  const preferred = preferredOf(options);
  if (removed.length === 0) throw usage('--address <address> is required (repeat it for several).');
  await amend(ctx, id, (contact) => withoutAddresses(contact, removed, preferred));
}

async function promote(ctx: Context, options: Options): Promise<void> {
  const id = contactIdOf(options);
  await withConnection(ctx, async ({ client }) => {
    const answer = await unchanged(client.post(contactPath(id, '/promotion'), {}), 'Nothing was promoted.');
    const contact = readContact(answer, client.endpoint, `POST ${CONTACTS}/{id}/promotion`);
    ctx.out.reading(answer, () => `Contact ${id} is an asserted contact: amend it with mailcairn contact update.\n\n${contactLines(ctx, contact)}`);
  });
}

/** One JSON document on standard output whatever `--output` says (client rule 1). */
async function exportContact(ctx: Context, options: Options): Promise<void> {
  const id = contactIdOf(options);
  await withConnection(ctx, async ({ client }) => {
    const answer = await client.get(contactPath(id, '/export'));
    const document = read(ExportAnswer, answer, client.endpoint, `GET ${CONTACTS}/{id}/export`);
    ctx.out.reading(answer, () => JSON.stringify(answer, null, 2));
    if (document.contact === null) ctx.out.note(`The book holds no contact ${id}: the export holds nothing about them.`);
  });
}

const ID_HELP = 'Contact identifier, such as c12 (contact list prints them)';

export function registerContact(program: Sade, run: Run): void {
  program
    .command('contact create')
    .describe('Record a contact as owner-asserted and show it.')
    .option('--name', 'The name')
    .option('--address', 'An address (repeat it for several)')
    .option('--preferred', 'The address to write to; required when several --address are given')
    .option('--note', 'A note')
    .example('contact create --name "Sato Aiko" --address sato@example.org --address aiko@example.net --preferred sato@example.org')
    .action(run((ctx, options) => create(ctx, options)));
  program
    .command('contact show')
    .describe('Show one contact by identifier, or every contact holding one address.')
    .option('--id', ID_HELP)
    .option('--address', 'An address (compared case-insensitively)')
    .action(run((ctx, options) => show(ctx, options)));
  program
    .command('contact list')
    .describe('Contacts in name order, one page at a time: identifier, origin, name, preferred address.')
    .option('--origin', 'Only contacts of this origin: Asserted or Collected')
    .option('--page-size', 'Contacts per page (1 to 200, default 50)')
    .option('--cursor', 'The cursor a previous page ended with (same --origin)')
    .action(run((ctx, options) => list(ctx, options)));
  program
    .command('contact update')
    .describe('Change what the options state and keep the rest: reads the contact, then replaces the whole record (last writer wins).')
    .option('--id', ID_HELP)
    .option('--name', 'The new name')
    .option('--note', 'The new note')
    .option('--clear-note', 'Remove the note')
    .option('--preferred', 'The address to write to, among the addresses the contact will hold')
    .option('--address', 'Every address the contact will hold, replacing the ones it holds (repeat it)')
    .action(run((ctx, options) => update(ctx, options)));
  program
    .command('contact add-address')
    .describe('Add addresses to an asserted contact (reads it, then replaces the whole record).')
    .option('--id', ID_HELP)
    .option('--address', 'An address to add (repeat it for several)')
    .option('--preferred', 'The address to write to afterwards (the preferred one stays otherwise)')
    .action(run((ctx, options) => addAddress(ctx, options)));
  program
    .command('contact remove-address')
    .describe('Remove addresses from an asserted contact; removing the preferred one needs --preferred naming the new one.')
    .option('--id', ID_HELP)
    .option('--address', 'An address to remove (repeat it for several)')
    .option('--preferred', 'The new preferred address, when the preferred one is removed')
    .action(run((ctx, options) => removeAddress(ctx, options)));
  program
    .command('contact promote')
    .describe('Make a collected contact an asserted one, so it can be amended.')
    .option('--id', ID_HELP)
    .action(run((ctx, options) => promote(ctx, options)));
  registerContactErasure(program, run);
  program
    .command('contact export')
    .describe('Everything held about one person, as one JSON document on standard output, with the instant it was taken.')
    .option('--id', ID_HELP)
    .action(run((ctx, options) => exportContact(ctx, options)));
}

/**
 * The whole record a `contact` command sends (admin-surface.md "Contact
 * routes" 1: amendments state the whole record), built from the options
 * and, for an amendment, from the contact as just read. Pure: every rule
 * the client can judge before sending is judged here, so a command line
 * that cannot make a valid record sends nothing. The deployment judges
 * again (actors/contacts/protocol.ts `ContactRecordInput`).
 *
 * The preferred marker (admin-surface.md "Contact": exactly one, stated
 * whenever there are several): `--preferred` names it among the addresses
 * the contact will hold; without it, one address alone is preferred, and
 * an amendment keeps the preferred address it had while that address
 * stays. Anything else needs `--preferred`.
 *
 * Failures name the option and the rule, never an address, name or note.
 */
import { CliFailure, usage } from '../failure.ts';
import { addressKey, type ContactAnswer } from './contact-view.ts';

export type RecordBody = {
  name: string;
  addresses: Array<{ address: string; preferred: boolean }>;
  note: string | null;
};

/** The addresses with exactly one marked preferred, or the rule that stops it. */
function marked(addresses: readonly string[], requested: string | undefined, kept: string | undefined, missing: string): RecordBody['addresses'] {
  const keys = addresses.map(addressKey);
  let preferred: string | undefined;
  if (requested !== undefined) {
    if (!keys.includes(addressKey(requested))) throw usage('--preferred must name one of the addresses the contact will hold.');
    preferred = addressKey(requested);
  } else if (addresses.length === 1) {
    preferred = keys[0];
  } else if (kept !== undefined && keys.includes(addressKey(kept))) {
    preferred = addressKey(kept);
  } else {
    throw usage(missing);
  }
  return addresses.map((address) => ({ address, preferred: addressKey(address) === preferred }));
}

function preferredOfContact(contact: ContactAnswer): string | undefined {
  return contact.addresses.find((a) => a.preferred)?.address;
}

export type CreateInput = { name: string | undefined; addresses: readonly string[]; preferred: string | undefined; note: string | undefined };

/** `contact create`: a name, one `--address` or more, `--preferred` when several. */
export function createdRecord(input: CreateInput): RecordBody {
  if (input.name === undefined) throw usage('--name <name> is required.');
  if (input.addresses.length === 0) throw usage('--address <address> is required (repeat it for several).');
  const addresses = marked(input.addresses, input.preferred, undefined, '--preferred is required when several --address are given: name the one to write to.');
  return { name: input.name, addresses, note: input.note ?? null };
}

export type UpdateInput = {
  name: string | undefined;
  /** The note to set, null to clear it, undefined to leave it. */
  note: string | null | undefined;
  preferred: string | undefined;
  /** Every address the contact will hold (the whole list), or none to keep them. */
  addresses: readonly string[];
};

/** `contact update`: what the options state changes; everything else is the contact as read. */
export function updatedRecord(contact: ContactAnswer, input: UpdateInput): RecordBody {
  if (input.name === undefined && input.note === undefined && input.preferred === undefined && input.addresses.length === 0) {
    throw usage('Nothing to change: give --name, --note, --clear-note, --preferred or --address.');
  }
  const addresses = input.addresses.length > 0 ? input.addresses : contact.addresses.map((a) => a.address);
  return {
    name: input.name ?? contact.name,
    addresses: marked(
      addresses,
      input.preferred,
      preferredOfContact(contact),
      "--preferred is required: the contact's preferred address is not among the --address given.",
    ),
    note: input.note === undefined ? contact.note : input.note,
  };
}

/** `contact add-address`: the addresses held, then the new ones; `--preferred` may name any of them. */
export function withAddedAddresses(contact: ContactAnswer, added: readonly string[], preferred: string | undefined): RecordBody {
  if (added.length === 0) throw usage('--address <address> is required (repeat it for several).');
  const held = new Set(contact.addresses.map((a) => addressKey(a.address)));
  if (added.some((a) => held.has(addressKey(a))))
    throw new CliFailure(`Contact ${contact.id} already holds an address given with --address; nothing was changed.`);
  return {
    name: contact.name,
    addresses: marked([...contact.addresses.map((a) => a.address), ...added], preferred, preferredOfContact(contact), '--preferred is required.'),
    note: contact.note,
  };
}

/** `contact remove-address`: what is left; removing the preferred address needs `--preferred` naming the new one. */
export function withoutAddresses(contact: ContactAnswer, removed: readonly string[], preferred: string | undefined): RecordBody {
  if (removed.length === 0) throw usage('--address <address> is required (repeat it for several).');
  const held = new Set(contact.addresses.map((a) => addressKey(a.address)));
  if (removed.some((a) => !held.has(addressKey(a)))) {
    throw new CliFailure(`Contact ${contact.id} does not hold an address given with --address; nothing was changed.`);
  }
  const gone = new Set(removed.map(addressKey));
  const left = contact.addresses.map((a) => a.address).filter((a) => !gone.has(addressKey(a)));
  if (left.length === 0) {
    throw new CliFailure(
      `A contact keeps at least one address, and this would remove every address of contact ${contact.id}; nothing was changed. To erase the person, use mailcairn contact delete.`,
    );
  }
  return {
    name: contact.name,
    addresses: marked(
      left,
      preferred,
      preferredOfContact(contact),
      '--preferred is required: it names the new preferred address when the preferred one is removed.',
    ),
    note: contact.note,
  };
}

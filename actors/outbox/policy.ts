/**
 * The recipient policy (`Outbox:RecipientPolicy`, docs/sending.md): denied
 * addresses and domains first (denied wins), then, when any allowance is
 * written, only what an allowance names. A domain entry names that domain
 * exactly; `.example.org` names its subdomains too. One refused recipient
 * refuses the whole message, and the refusal names the rule, never the
 * address.
 *
 * The contact rule (`Contacts`, docs/contacts.md "Recipient policy") comes
 * after the lists: under `Asserted` every recipient must be an address an
 * asserted contact holds, under `AssertedOrCollected` any contact's. It
 * reads the book through `inBook`, so the check and the record happen in
 * the outbox's one transaction: what a prompt-injected agent cannot do is
 * mail an address the owner never vouched for.
 */
import type { OutboxConfig } from './protocol.ts';

/** Whether the contact book holds an address, as the contact rule asks (`assertedHolds`/`anyHolds` of runtime/store/contacts/book.ts). */
export type InBook = (address: string, origin: 'asserted' | 'any') => boolean;

type Policy = OutboxConfig['policy'];

function domainMatches(domain: string, entries: readonly string[]): boolean {
  return entries.some((entry) => {
    const e = entry.toLowerCase();
    return e.startsWith('.') ? domain === e.slice(1) || domain.endsWith(e) : domain === e;
  });
}

/** Why the policy refuses this address, as a rule name; null when it is allowed. */
type Rule = 'denied-address' | 'denied-domain' | 'not-allowed' | 'not-a-contact' | 'not-an-asserted-contact';

export function refusedBy(address: string, policy: Policy, inBook: InBook): Rule | null {
  const lower = address.toLowerCase();
  const domain = lower.slice(lower.lastIndexOf('@') + 1);
  if (policy.deniedAddresses.some((a) => a.toLowerCase() === lower)) return 'denied-address';
  if (domainMatches(domain, policy.deniedDomains)) return 'denied-domain';
  const anyAllowance = policy.allowedAddresses.length + policy.allowedDomains.length > 0;
  if (anyAllowance && !(policy.allowedAddresses.some((a) => a.toLowerCase() === lower) || domainMatches(domain, policy.allowedDomains))) return 'not-allowed';
  if (policy.contacts === 'Asserted' && !inBook(address, 'asserted')) return 'not-an-asserted-contact';
  if (policy.contacts === 'AssertedOrCollected' && !inBook(address, 'any')) return 'not-a-contact';
  return null;
}

const SENTENCES = {
  'denied-address': 'a recipient is an address the sending policy denies (Outbox:RecipientPolicy:DeniedAddresses); nothing was queued',
  'denied-domain': 'a recipient is in a domain the sending policy denies (Outbox:RecipientPolicy:DeniedDomains); nothing was queued',
  'not-allowed': 'a recipient is outside the addresses and domains the sending policy allows (Outbox:RecipientPolicy); nothing was queued',
  'not-an-asserted-contact':
    'a recipient is not an address of an asserted contact, and the sending policy allows only those (Outbox:RecipientPolicy:Contacts); nothing was queued',
  'not-a-contact': 'a recipient is not in the contact book, and the sending policy allows only contacts (Outbox:RecipientPolicy:Contacts); nothing was queued',
} as const;

/** The first refusal among the recipients, as a sentence; null when every one is allowed. */
export function policyRefusal(addresses: readonly string[], policy: Policy, inBook: InBook): string | null {
  for (const address of addresses) {
    const rule = refusedBy(address, policy, inBook);
    if (rule !== null) return SENTENCES[rule];
  }
  return null;
}

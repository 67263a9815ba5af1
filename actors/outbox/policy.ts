/**
 * The recipient policy (`Outbox:RecipientPolicy`, docs/sending.md): denied
 * addresses and domains first (denied wins), then, when any allowance is
 * written, only what an allowance names. A domain entry names that domain
 * exactly; `.example.org` names its subdomains too. One refused recipient
 * refuses the whole message, and the refusal names the rule, never the
 * address.
 */
import type { OutboxConfig } from './protocol.ts';

type Policy = OutboxConfig['policy'];

function domainMatches(domain: string, entries: readonly string[]): boolean {
  return entries.some((entry) => {
    const e = entry.toLowerCase();
    return e.startsWith('.') ? domain === e.slice(1) || domain.endsWith(e) : domain === e;
  });
}

/** Why the policy refuses this address, as a rule name; null when it is allowed. */
export function refusedBy(address: string, policy: Policy): 'denied-address' | 'denied-domain' | 'not-allowed' | null {
  const lower = address.toLowerCase();
  const domain = lower.slice(lower.lastIndexOf('@') + 1);
  if (policy.deniedAddresses.some((a) => a.toLowerCase() === lower)) return 'denied-address';
  if (domainMatches(domain, policy.deniedDomains)) return 'denied-domain';
  const anyAllowance = policy.allowedAddresses.length + policy.allowedDomains.length > 0;
  if (!anyAllowance) return null;
  if (policy.allowedAddresses.some((a) => a.toLowerCase() === lower) || domainMatches(domain, policy.allowedDomains)) return null;
  return 'not-allowed';
}

const SENTENCES = {
  'denied-address': 'a recipient is an address the sending policy denies (Outbox:RecipientPolicy:DeniedAddresses); nothing was queued',
  'denied-domain': 'a recipient is in a domain the sending policy denies (Outbox:RecipientPolicy:DeniedDomains); nothing was queued',
  'not-allowed': 'a recipient is outside the addresses and domains the sending policy allows (Outbox:RecipientPolicy); nothing was queued',
} as const;

/** The first refusal among the recipients, as a sentence; null when every one is allowed. */
export function policyRefusal(addresses: readonly string[], policy: Policy): string | null {
  for (const address of addresses) {
    const rule = refusedBy(address, policy);
    if (rule !== null) return SENTENCES[rule];
  }
  return null;
}

/**
 * The rule listing (`GET /api/admin/rules`): the loaded rules in run order,
 * with their keys as the configuration writes them, and whether the
 * configuration file on disk still says what they were read from — its
 * `MailRules` section read again now, with the environment overrides the
 * service started with, against the section loaded at startup (both with
 * defaults filled in, compared key order aside). `Unknown` with a reason
 * when the file cannot be read or no longer validates; the reason names
 * no value of the file.
 *
 * The configuration loader is imported on the first listing, not with the
 * actor: it is the whole configuration schema (≈ 2 MiB of heap on the
 * system thread), and most starts never list the rules.
 *
 * Importable by the mail-rules actor.
 */
import type { ListRulesReply, MailRulesConfig, RulesOnDisk } from './protocol.ts';

/** JSON with object keys sorted, so two parses of one section compare equal. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

export async function onDisk(config: MailRulesConfig): Promise<RulesOnDisk> {
  const { file, explicit, overrides } = config.source;
  if (file === null) return { state: 'Unknown', reason: 'the service was not started from a configuration file' };
  const { mailRulesOnDisk } = await import('../../config/load.ts');
  const read = mailRulesOnDisk({ file, explicit, overrides });
  if (!read.ok) return { state: 'Unknown', reason: read.reason };
  return { state: canonical(read.section) === canonical(config.loaded) ? 'Equal' : 'Differs', reason: null };
}

export async function listRules(config: MailRulesConfig): Promise<ListRulesReply> {
  return {
    enabled: config.enabled,
    rules: config.rules.map((rule, index) => ({
      position: index + 1,
      name: rule.name,
      accounts: rule.accounts,
      conditions: {
        ...(rule.conditions.senderAddress !== undefined ? { SenderAddress: rule.conditions.senderAddress } : {}),
        ...(rule.conditions.senderDomain !== undefined ? { SenderDomain: rule.conditions.senderDomain } : {}),
        ...(rule.conditions.subjectContains !== undefined ? { SubjectContains: rule.conditions.subjectContains } : {}),
        ...(rule.conditions.folder !== undefined ? { Folder: rule.conditions.folder } : {}),
      },
      actions: {
        ...(rule.actions.moveTo !== undefined ? { MoveTo: rule.actions.moveTo } : {}),
        ...(rule.actions.markSeen !== undefined ? { MarkSeen: rule.actions.markSeen } : {}),
        ...(rule.actions.markFlagged !== undefined ? { MarkFlagged: rule.actions.markFlagged } : {}),
        ...(rule.actions.addKeywords !== undefined ? { AddKeywords: rule.actions.addKeywords } : {}),
      },
    })),
    configurationFile: await onDisk(config),
  };
}

/**
 * Field names that are never logged, at any depth, lower-cased: secrets and
 * credential material, and personal data taken from mail (docs/security.md
 * "What is logged, and what never is": nothing from a mail is a log field). `log.ts` censors
 * every field whose lower-cased name is listed; a new secret-bearing or
 * personal field is added here, once. Generic names (`name`, `key`) are left
 * out on purpose: they carry credential names and error names the spec wants
 * in the log (an expired key is logged by name).
 */
export const redactedKeys: readonly string[] = Object.freeze([
  // Credentials and material
  'password',
  'passphrase',
  'secret',
  'clientsecret',
  'token',
  'accesstoken',
  'refreshtoken',
  'idtoken',
  'authtoken',
  'apikey',
  'x-api-key',
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'capability',
  'assertion',
  'privatekey',
  'material',
  'keyring',
  'secretreference',
  'trustedcertificate',
  // Personal data from mail and contacts
  'subject',
  'from',
  'to',
  'cc',
  'bcc',
  'replyto',
  'sender',
  'recipient',
  'recipients',
  'address',
  'addresses',
  'email',
  'emailaddress',
  'senderaddress',
  'recipientaddress',
  'body',
  'text',
  'html',
  'snippet',
  'snippets',
  'question',
  'answer',
  'displayname',
  'contactname',
  'note',
  'owner',
  'username',
]);

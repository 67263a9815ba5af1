/**
 * Proxy trust, addresses that must not be clear text, accounts, storage and
 * the relations inside background-work sections.
 */
import t from 'tap';
import { validateConfig } from '../../../config/load.ts';
import { problemLines } from '../fixtures.ts';

const account = (id: string, extra: Record<string, unknown> = {}) => ({
  Id: id,
  Imap: { Host: 'imap.example.org', Username: id, Password: `env:${id.toUpperCase()}_PASSWORD` },
  Folders: [{ Alias: 'inbox', Path: 'INBOX' }],
  ...extra,
});

t.test('TrustedProxies: a network with host bits is refused naming what it would become', (t) => {
  t.same(problemLines({ ReverseProxy: { TrustedProxies: ['10.0.0.0/8', '192.0.2.7', 'fd00::/8', '::1'] } }), []);
  t.same(problemLines({ ReverseProxy: { TrustedProxies: ['10.1.2.3/8', '2001:db8::1/32', 'proxy.local', '10.0.0.0/40'] } }), [
    'ReverseProxy:TrustedProxies:0: 10.1.2.3/8 has host bits set; write the network it would become, 10.0.0.0/8, or the single address',
    'ReverseProxy:TrustedProxies:1: 2001:db8::1/32 has host bits set; write the network it would become, 2001:db8::/32, or the single address',
    'ReverseProxy:TrustedProxies:2: must be an IP address or a CIDR network (e.g. 10.0.0.0/8, fd00::/8)',
    'ReverseProxy:TrustedProxies:3: has a prefix length that does not fit the address (0 to 32 for IPv4, 0 to 128 for IPv6)',
  ]);
  t.end();
});

t.test('PublicBaseAddress refuses clear text to a host other than this machine', (t) => {
  t.same(problemLines({ Deployment: { PublicBaseAddress: 'https://mail.example.org' } }), []);
  t.same(problemLines({ Deployment: { PublicBaseAddress: 'http://127.0.0.1:8080' } }), []);
  t.same(problemLines({ Deployment: { PublicBaseAddress: 'http://localhost:8080' } }), []);
  t.same(problemLines({ Deployment: { PublicBaseAddress: 'http://mail.example.org' } }), [
    'Deployment:PublicBaseAddress: must be an https URL: clear text is only allowed to a loopback host',
  ]);
  t.end();
});

t.test('accounts: Ids and aliases unique, Security None only to loopback, one IMAP login', (t) => {
  t.same(problemLines({ Accounts: [account('alice'), account('bob')] }), []);
  t.same(problemLines({ Accounts: [account('alice'), account('alice')] }), ['Accounts:1:Id: repeats the Id of Accounts:0; account Ids are unique']);
  t.same(problemLines({ Accounts: [account('alice', { Folders: [{ Alias: 'inbox' }, { Alias: 'inbox', Path: 'Other' }] })] }), [
    'Accounts:0:Folders:1:Alias: repeats the alias of Folders:0; aliases are unique in an account',
  ]);
  const clear = account('alice', { Imap: { Host: 'imap.example.org', Security: 'None', Username: 'a', Password: 'env:P' } });
  t.same(problemLines({ Accounts: [clear] }), [
    'Accounts:0:Imap:Security: None sends the login in clear text and is allowed only to a loopback host; use Tls or StartTls',
  ]);
  const local = account('alice', { Imap: { Host: '127.0.0.1', Security: 'None', Username: 'a', Password: 'env:P' } });
  t.same(problemLines({ Accounts: [local] }), []);
  const both = account('alice', {
    Imap: { Host: 'h.example.org', Username: 'a', Password: 'env:P', OAuth: { TokenEndpoint: 'https://t.example.org/token', ClientId: 'c' } },
  });
  t.same(problemLines({ Accounts: [both] }), ['Accounts:0:Imap: must log in with either Password or OAuth, not both']);
  const neither = account('alice', { Imap: { Host: 'h.example.org', Username: 'a' } });
  t.same(problemLines({ Accounts: [neither] }), ['Accounts:0:Imap: must log in with Password (a secret reference) or OAuth']);
  const relay = account('alice', { Smtp: { Host: 'localhost', Port: 25, Security: 'None', Username: 'a' } });
  t.same(problemLines({ Accounts: [relay] }), [
    'Accounts:0:Smtp: the sender address cannot be told: write From, or log in with an address as the SMTP or IMAP Username',
  ]);
  const withFrom = account('alice', { Smtp: { Host: 'localhost', Port: 25, Security: 'None', Username: 'a', From: 'alice@example.org' } });
  t.same(problemLines({ Accounts: [withFrom] }), [], 'an SMTP relay on this machine needs no login');
  const loginAddress = account('alice', { Smtp: { Host: 'localhost', Port: 25, Security: 'None', Username: 'alice@example.org' } });
  t.same(problemLines({ Accounts: [loginAddress] }), [], 'a login that is an address is the sender address');
  const badFrom = account('alice', { Smtp: { Host: 'localhost', Security: 'None', Username: 'a', From: 'Alice <alice@example.org>' } });
  t.same(problemLines({ Accounts: [badFrom] }), ['Accounts:0:Smtp:From: must be a plain address such as name@example.org (no display name)']);
  const smtpOAuth = account('alice', {
    Smtp: { Host: 'localhost', Security: 'None', Username: 'alice@example.org', OAuth: { TokenEndpoint: 'https://login.example.org/token', ClientId: 'c' } },
  });
  t.same(problemLines({ Accounts: [smtpOAuth] }), [
    'Accounts:0:Smtp:OAuth: SMTP XOAUTH2 uses the refresh token of the IMAP login; configure Imap:OAuth (with scopes covering SMTP) too',
  ]);
  t.match(problemLines({ Accounts: [account('Alice Smith')] }).join('\n'), /Accounts:0:Id: must be 1 to 63 lower-case letters/);
  t.match(problemLines({ Accounts: [account('alice', { Folders: [] })] }).join('\n'), /Accounts:0:Folders: must map at least one folder/);
  t.end();
});

t.test('mail ports default from the security mode', async (t) => {
  const { defaultMailPort } = await import('../../../config/schema/accounts.ts');
  t.equal(defaultMailPort('Imap', 'Tls'), 993);
  t.equal(defaultMailPort('Imap', 'StartTls'), 143);
  t.equal(defaultMailPort('Smtp', 'Tls'), 465);
  t.equal(defaultMailPort('Smtp', 'StartTls'), 587);
  t.equal(defaultMailPort('Smtp', 'None'), 25);
});

t.test('storage: a server URL or a file; a token only with a server', (t) => {
  t.same(problemLines({ Storage: { Database: 'libsql://db.example.org', AuthToken: 'env:DB_TOKEN' } }), []);
  t.same(problemLines({ Storage: { Database: '/var/lib/mailcairn/mail.db', AuthToken: 'env:DB_TOKEN' } }), [
    'Storage:AuthToken: is only used with a libSQL server URL in Storage:Database, which is a file path here',
  ]);
  t.same(problemLines({ Storage: { Database: 'http://db.example.org' } }), [
    'Storage:Database: http:// is clear text and allowed only to a loopback host; use libsql:// or https://',
  ]);
  t.same(problemLines({ Storage: { Database: 'https://db.example.org?authToken=abc' } }), [
    'Storage:Database: must not carry credentials; write the token as Storage:AuthToken (a secret reference)',
  ]);
  t.same(problemLines({ Storage: { Database: 'ftp://db.example.org' } }), [
    'Storage:Database: must be a file path, or a libsql://, https:// or http:// server URL',
  ]);
  t.end();
});

t.test('background work: backoff bounds in order, an embedding declaration whole, chat aliases unique', (t) => {
  t.same(problemLines({ MailSynchronization: { Backoff: { Initial: '00:10:00', Maximum: '00:05:00' } } }), [
    'MailSynchronization:Backoff:Maximum: must be at least Backoff:Initial (00:10:00)',
  ]);
  t.same(problemLines({ Embeddings: { Model: 'm' } }), [
    'Embeddings:BaseAddress: is required to declare an embedding profile (BaseAddress, Model and Dimensions together)',
    'Embeddings:Dimensions: is required to declare an embedding profile (BaseAddress, Model and Dimensions together)',
  ]);
  t.same(problemLines({ Embeddings: { ApiKey: 'env:K' } }), ['Embeddings:ApiKey: is written but no profile is declared (BaseAddress, Model and Dimensions)']);
  t.same(problemLines({ Embeddings: { BaseAddress: 'http://embed.example.org', Model: 'm', Dimensions: 3 } }), [
    'Embeddings:BaseAddress: must be an https URL: clear text is only allowed to a loopback host',
  ]);
  t.same(problemLines({ Embeddings: { Provider: 'Local' } }), [], 'the local model is declared by its provider alone');
  t.same(problemLines({ Embeddings: { Provider: 'Local', Model: 'universal-sentence-encoder-lite-en', Dimensions: 512 } }), []);
  t.same(problemLines({ Embeddings: { Provider: 'Local', LocalThreads: 1 } }), [], 'the local model on one thread');
  t.same(problemLines({ Embeddings: { BaseAddress: 'http://127.0.0.1:11434/v1', Model: 'm', Dimensions: 3, LocalThreads: 2 } }), [
    'Embeddings:LocalThreads: is used by Provider Local only (remove it)',
  ]);
  t.same(
    problemLines({ Embeddings: { Provider: 'Local', BaseAddress: 'http://127.0.0.1:11434', ApiKey: 'env:K', Model: 'nomic-embed-text', Dimensions: 768 } }),
    [
      'Embeddings:BaseAddress: is not used by Provider Local (remove it, or use Provider OpenAiCompatible)',
      'Embeddings:ApiKey: is not used by Provider Local (remove it)',
      'Embeddings:Model: must be absent or universal-sentence-encoder-lite-en with Provider Local (the model shipped with Mailcairn)',
      'Embeddings:Dimensions: must be absent or 512 with Provider Local',
    ],
  );
  const chat = (alias: string) => ({ Alias: alias, BaseAddress: 'http://127.0.0.1:11434/v1', Model: 'm' });
  t.same(problemLines({ Answering: { Endpoints: [chat('local'), chat('local')] } }), [
    'Answering:Endpoints:1:Alias: repeats the alias of Answering:Endpoints:0',
  ]);
  t.end();
});

t.test('rules and spam name configured accounts and aliases', (t) => {
  const accounts = [account('alice', { Folders: [{ Alias: 'inbox' }, { Alias: 'archive' }] }), account('bob')];
  const rule = (extra: Record<string, unknown>) => ({ Name: 'r', When: { SenderDomain: 'news.example.com' }, Then: { MarkSeen: true }, ...extra });
  t.same(problemLines({ Accounts: accounts, MailRules: { Rules: [rule({ Accounts: ['alice'], Then: { MoveTo: 'archive' } })] } }), []);
  t.same(problemLines({ Accounts: accounts, MailRules: { Rules: [rule({ Then: { MoveTo: 'archive' } })] } }), [
    'MailRules:Rules:0:Then:MoveTo: names alias archive, which account(s) bob do not map',
  ]);
  t.same(problemLines({ Accounts: accounts, MailRules: { Rules: [rule({ Accounts: ['carol'] })] } }), [
    'MailRules:Rules:0:Accounts:0: names no configured account (carol)',
  ]);
  t.same(problemLines({ MailRules: { Rules: [rule({ When: {}, Then: {} })] } }), [
    'MailRules:Rules:0:When: must state at least one condition',
    'MailRules:Rules:0:Then: must ask for at least one change',
  ]);
  // A keyword the change journal would refuse is refused at startup, naming the place, never the keyword.
  t.same(problemLines({ MailRules: { Rules: [rule({ Then: { AddKeywords: ['ok-one', 'two words', 'x'.repeat(101)] } })] } }), [
    'MailRules:Rules:0:Then:AddKeywords:1: must be one IMAP keyword of at most 100 characters, without spaces, quotes, parentheses, backslash or ] % * {',
    'MailRules:Rules:0:Then:AddKeywords:2: must be one IMAP keyword of at most 100 characters, without spaces, quotes, parentheses, backslash or ] % * {',
  ]);
  t.same(problemLines({ Accounts: accounts, Spam: { Enabled: true, Action: 'Move', Folder: 'archive' } }), [
    'Spam:Folder: names alias archive, which account(s) bob do not map',
  ]);
  t.end();
});

t.test('validation is pure: the same tree gives the same answer twice', (t) => {
  const tree = { Accounts: [account('alice')] };
  t.same(validateConfig(tree), validateConfig(tree));
  t.end();
});

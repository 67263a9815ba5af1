/**
 * Certificate authorities made at test time, with openssl (Debian's), for
 * the TLS tests: roots, intermediates, server and client leaves with the
 * names, extended key usages, key usages and validity a test asks for
 * (validity in the past or the future too: `openssl ca` takes explicit start
 * and end dates), and PKCS#12 bundles.
 *
 * Everything is written under the directory given; nothing is shared between
 * tests. Synchronous: a certificate takes a few milliseconds.
 *
 * @example
 *   const ca = createCa(dir, 'Test Root');
 *   const leaf = issue(ca, { name: 'mail', dns: ['mail.example.test'], eku: ['serverAuth'] });
 *   // leaf.certPath, leaf.keyPath, leaf.cert (PEM), leaf.key (PEM)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type Issued = {
  /** A file-system-safe name, unique under the authority's directory. */
  readonly name: string;
  readonly certPath: string;
  readonly keyPath: string;
  /** PEM of the certificate alone. */
  readonly cert: string;
  /** PEM (PKCS#8) of its private key. */
  readonly key: string;
};

export type TestCa = Issued & {
  readonly dir: string;
  /** The authority that issued this one (intermediates), or null for a root. */
  readonly parent: TestCa | null;
};

export type IssueOptions = {
  /** File-system-safe name; also the subject's CN. */
  name: string;
  /** DNS subject alternative names. */
  dns?: readonly string[];
  /** IP subject alternative names. */
  ips?: readonly string[];
  /** Extended key usages; none written when empty or absent. */
  eku?: readonly ('serverAuth' | 'clientAuth')[];
  /** Key usages; absent writes none (a leaf without the extension). */
  keyUsage?: readonly ('digitalSignature' | 'keyEncipherment' | 'keyCertSign' | 'cRLSign')[];
  /** Validity, as offsets from now in days (default -1 to +365). */
  validFromDays?: number;
  validToDays?: number;
  /** Key algorithm (default EC P-256). */
  keyType?: 'ec' | 'rsa';
};

const OPENSSL_CA_CONFIG = `
[ ca ]
default_ca = testca
[ testca ]
dir = .
database = $dir/index.txt
new_certs_dir = $dir/issued
serial = $dir/serial
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = none
[ anything ]
commonName = supplied
`;

function run(args: readonly string[], cwd?: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** `openssl ca` date form (UTC, YYYYMMDDHHMMSSZ), `days` from now. */
function caDate(days: number): string {
  return `${new Date(Date.now() + days * 86_400_000).toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
}

function newKey(path: string, keyType: 'ec' | 'rsa'): void {
  if (keyType === 'rsa') run(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', path]);
  else run(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path]);
}

function extensions(options: IssueOptions, isCa: boolean): string {
  const lines = [`basicConstraints = critical, CA:${isCa ? 'TRUE' : 'FALSE'}`, 'subjectKeyIdentifier = hash', 'authorityKeyIdentifier = keyid'];
  const names = [...(options.dns ?? []).map((d) => `DNS:${d}`), ...(options.ips ?? []).map((ip) => `IP:${ip}`)];
  if (names.length > 0) lines.push(`subjectAltName = ${names.join(', ')}`);
  if (options.eku !== undefined && options.eku.length > 0) lines.push(`extendedKeyUsage = ${options.eku.join(', ')}`);
  const usage = options.keyUsage ?? (isCa ? ['keyCertSign', 'cRLSign'] : undefined);
  if (usage !== undefined && usage.length > 0) lines.push(`keyUsage = critical, ${usage.join(', ')}`);
  return `[ ext ]\n${lines.join('\n')}\n`;
}

/** Signs `name`'s request with `signer` (its own key when null: a self-signed root). */
function sign(dir: string, options: IssueOptions, signer: TestCa | null, isCa: boolean): Issued {
  const keyPath = join(dir, `${options.name}.key`);
  const csrPath = join(dir, `${options.name}.csr`);
  const certPath = join(dir, `${options.name}.crt`);
  const extPath = join(dir, `${options.name}.ext`);
  newKey(keyPath, options.keyType ?? 'ec');
  run(['req', '-new', '-key', keyPath, '-subj', `/CN=${options.name}`, '-out', csrPath]);
  writeFileSync(extPath, extensions(options, isCa));
  const caDir = signer?.dir ?? dir;
  const signing = signer === null ? ['-selfsign', '-keyfile', keyPath] : ['-cert', signer.certPath, '-keyfile', signer.keyPath];
  run(
    [
      'ca',
      '-batch',
      '-notext',
      '-config',
      join(caDir, 'openssl.cnf'),
      ...signing,
      '-in',
      csrPath,
      '-out',
      certPath,
      '-extfile',
      extPath,
      '-extensions',
      'ext',
      '-startdate',
      caDate(options.validFromDays ?? -1),
      '-enddate',
      caDate(options.validToDays ?? 365),
    ],
    caDir,
  );
  const cert = readFileSync(certPath, 'utf8');
  return { name: options.name, certPath, keyPath, cert: cert.slice(cert.indexOf('-----BEGIN')), key: readFileSync(keyPath, 'utf8') };
}

function prepareCaDir(dir: string): void {
  mkdirSync(join(dir, 'issued'), { recursive: true });
  writeFileSync(join(dir, 'openssl.cnf'), OPENSSL_CA_CONFIG);
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), `${Date.now().toString(16).padStart(16, '0')}\n`);
}

/** A root authority (or, with `parent`, an intermediate it issues) in a directory of its own under `baseDir`. */
export function createCa(baseDir: string, name: string, options: Omit<IssueOptions, 'name'> & { parent?: TestCa } = {}): TestCa {
  const dir = join(baseDir, name.replace(/[^A-Za-z0-9_.-]/g, '_'));
  prepareCaDir(dir);
  const { parent, ...rest } = options;
  const issued = sign(dir, { ...rest, name: 'ca' }, parent ?? null, true);
  return { ...issued, name, dir, parent: parent ?? null };
}

/** A leaf issued by `ca`. */
export function issue(ca: TestCa, options: IssueOptions): Issued {
  return sign(ca.dir, options, ca, false);
}

/** The PEM chain of a leaf: the leaf, then each authority up to (and without) the root unless `withRoot`. */
export function chainOf(leaf: Issued, ca: TestCa, withRoot = false): string {
  const parts = [leaf.cert];
  for (let at: TestCa | null = ca; at !== null; at = at.parent) {
    if (at.parent === null && !withRoot) break;
    parts.push(at.cert);
  }
  return parts.join('');
}

/** A PKCS#12 bundle of `leaf` with `chain` (PEM of the authorities to include), written to `path`; `password` may be empty. */
export function pkcs12(path: string, leaf: Issued, chain: string, password: string): string {
  const chainPath = `${path}.chain.pem`;
  writeFileSync(chainPath, chain);
  const args = ['pkcs12', '-export', '-in', leaf.certPath, '-inkey', leaf.keyPath, '-out', path, '-passout', `pass:${password}`];
  if (chain !== '') args.push('-certfile', chainPath);
  run(args);
  return path;
}

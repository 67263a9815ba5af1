/** What every command is given: where profiles live, the streams, the environment, and the options every command takes. */
import type { Output } from './output.ts';
import type { Terminal } from './standard-input.ts';

export type Context = {
  readonly env: NodeJS.ProcessEnv;
  /** The configuration directory holding the credential file. */
  readonly dir: string;
  readonly out: Output;
  readonly io: Terminal;
  /** This client's version (runtime/version.ts), compared with the deployment's. */
  readonly clientVersion: string;
  /** `--endpoint`: a profile name or an address. */
  readonly endpointOption: string | undefined;
};

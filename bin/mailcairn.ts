#!/usr/bin/env node
/**
 * `mailcairn`: the operator client of the administrative endpoint
 * (admin-surface.md, `<cli>`). It never reads the service's configuration
 * or database: every command is an HTTP request to the endpoint. Commands
 * arrive with the administrative endpoint; until then only the version and
 * help are served, and no command is pretended.
 */
import sade from 'sade';
import { version } from '../runtime/version.ts';

sade('mailcairn').version(version).describe('Operator client of a Mailcairn deployment').parse(process.argv);

/** `GET /api/admin/session`: needs no permission, so a credential granted nothing can learn that it holds nothing. */
import { z } from 'zod';
import { AdminPermissions } from '../../../config/permissions.ts';
import { defineRoute } from '../route.ts';
import { sessionReport } from '../use-cases/session.ts';
import { ADMIN_PREFIX } from './prefix.ts';

export const SessionReport = z.strictObject({
  service: z.literal('mailcairn').describe('The product that answered'),
  version: z.string().describe('The running version, `major.minor.patch+build` (`+unstamped` for a local build)'),
  credential: z.string().describe('The name of what authenticated: the entry name, `issuer subject` for a token, or `anonymous`'),
  permissions: z.array(z.enum(AdminPermissions)).describe('The permissions held, in the surface order'),
});

export const sessionRoutes = [
  defineRoute({
    method: 'GET',
    path: `${ADMIN_PREFIX}/session`,
    permission: null,
    summary: 'The credential that authenticated, the running version and the permissions held',
    answer: SessionReport,
    async handle({ principal }, deps) {
      return { status: 200, json: sessionReport(deps.version, principal) };
    },
  }),
];

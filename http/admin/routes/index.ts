/**
 * The routes this build serves, one line per group. A route of the spec's
 * table that is not here answers 404 to an authenticated caller: never a stub.
 */
import type { Route } from '../route.ts';
import { auditRoutes } from './audit.ts';
import { contactRoutes } from './contacts.ts';
import { embeddingRoutes } from './embeddings.ts';
import { folderRoutes } from './folders.ts';
import { jobRoutes } from './jobs.ts';
import { mailboxRoutes } from './mailbox.ts';
import { outboxRoutes } from './outbox.ts';
import { ruleRoutes } from './rules.ts';
import { sessionRoutes } from './session.ts';
import { spamRoutes } from './spam.ts';

export const ROUTES: readonly Route[] = [
  ...sessionRoutes,
  ...mailboxRoutes,
  ...auditRoutes,
  ...embeddingRoutes,
  ...folderRoutes,
  ...jobRoutes,
  ...outboxRoutes,
  ...contactRoutes,
  ...ruleRoutes,
  ...spamRoutes,
];

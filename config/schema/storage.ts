/**
 * `Storage`: where the one libSQL database lives. A file path (relative to
 * the working directory) or a libSQL server URL; `AuthToken` only with a URL
 * (checked in `config/checks/storage.ts`).
 */
import { z } from 'zod';
import { choice, text } from './fields.ts';
import { secretRef } from './secret-ref.ts';
import { timeSpan } from './time-span.ts';

export const Storage = z
  .strictObject({
    Database: text('A file path, or a libsql://, http:// or https:// server URL', 4_096).default('./data/mailcairn.db'),
    AuthToken: secretRef('Token of a libSQL server, by reference; only with a server URL').optional(),
    BusyTimeout: timeSpan('00:00:00', '00:01:00', 'How long a connection waits for a lock').prefault('00:00:05'),
    Synchronous: choice(['Full', 'Normal'], 'SQLite synchronous mode; Normal may lose the last transactions on power loss').default('Full'),
  })
  .meta({ description: 'The database' });

/**
 * Where an audit page of the query pool starts: the keyset position of the
 * last entry already shown, `ended_at` (epoch ms) and `id`. Shared by the
 * mailbox-change and answering audit contracts; shape only.
 */
import { z } from 'zod';

export const AuditPosition = z.tuple([z.number().int(), z.number().int().positive()]);

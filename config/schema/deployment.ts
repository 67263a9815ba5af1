/**
 * `Deployment`: facts about the deployment as the world reaches it.
 * `PublicBaseAddress` is the only address links are issued under (never the
 * request's Host); without it no attachment link is issued.
 */
import { z } from 'zod';
import { httpUrl } from './fields.ts';

export const Deployment = z
  .strictObject({
    PublicBaseAddress: httpUrl('Public address attachment links are issued under; clear text only to a loopback host', {
      https: 'unless-loopback',
      plain: true,
    }).optional(),
  })
  .meta({ description: 'The deployment as the world reaches it' });

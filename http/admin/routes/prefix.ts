/** Every administrative route lives under this prefix (no version segment: docs/admin-api.md "The listener"). */
export const ADMIN_PREFIX = '/api/admin';

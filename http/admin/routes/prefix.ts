/** Every administrative route lives under this prefix (admin-surface "Versioning" 1: no version segment). */
export const ADMIN_PREFIX = '/api/admin';

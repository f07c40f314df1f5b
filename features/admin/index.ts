/**
 * @module The admin room's public surface: the admin API and console as one Fastify plugin, and
 * who may see admin details elsewhere (`/readyz`: the admin secret, spending guesses like a sign-in).
 */
export { adminPlugin, type AdminOptions } from './plugin.ts';
export { isAdmin } from './admin-access.ts';
export { SignInLimit, type SignInLimitOptions } from './sign-in-limit.ts';
export { AdminSchema } from './admin-settings.ts';

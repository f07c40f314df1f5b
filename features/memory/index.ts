/**
 * @module The memory room's public surface: each device's memory as its sessions use it (recall,
 * batched recording of turns, the summary after a session, retention). Its rows: store/memory.ts.
 */
export { DeviceMemory, type DeviceMemoryOptions, type MemorySettings } from './device-memory.ts';
export { MemorySchema } from './memory-settings.ts';

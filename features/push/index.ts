/**
 * @module The push room's public surface: the `Push` contract (server-initiated speech, what the
 * admin API and reminders call) and its one implementation, the `IdleDeviceLinks` contract a
 * transport implements to reach idle devices, the `notify` audio (synthesis, single-use clip URLs)
 * and the `push` settings block. Its rows: store/push-messages.ts.
 */
export type { Push, PushSource, SayOutcome, SayRequest, SayStatus } from './push.ts';
export { PushDelivery, type PushConfig, type PushDeliveryOptions } from './push-delivery.ts';
export type { IdleDeviceLink, IdleDeviceLinks } from './idle-links.ts';
export { AudioClips, pushAudioRoute } from './audio-clips.ts';
export { notifyAudio, type NotifyAudioOptions } from './notify-audio.ts';
export { PushSchema } from './push-settings.ts';

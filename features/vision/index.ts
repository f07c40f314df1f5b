/**
 * @module The vision room's public surface: the camera endpoint the server hosts
 * (`POST /mcp/vision/explain`, route.ts), each session's token and advertised URL (`Vision.grantFor`),
 * which model an agent's photos go to, the opt-in last photo per device, and the `vision` block of
 * the configuration. See docs/vision.md.
 */
export {
  Vision,
  visionUrlFor,
  type VisionOptions,
  type VisionGrantForSession,
  type VisionSessionInfo,
} from './vision.ts';
export { VISION_EXPLAIN_PATH } from './route.ts';
export { VisionSchema, type VisionSettings } from './vision-settings.ts';
export type { VisionChoice } from './model-choice.ts';
export type { LastImage, LastImages } from './last-images.ts';

/**
 * @module The emotion names the xiaozhi firmware shows as faces (the `emotion` of the `llm`
 * message). Both sides need them: llm/ reads them from the model's reply, protocol/ sends them
 * (with the emoji it pairs with each) to the device.
 */

export const EMOTIONS = [
  'neutral',
  'happy',
  'laughing',
  'funny',
  'sad',
  'angry',
  'crying',
  'loving',
  'embarrassed',
  'surprised',
  'shocked',
  'thinking',
  'winking',
  'cool',
  'relaxed',
  'delicious',
  'kissy',
  'confident',
  'sleepy',
  'silly',
  'confused',
] as const;
export type Emotion = (typeof EMOTIONS)[number];

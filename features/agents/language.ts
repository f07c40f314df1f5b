/**
 * @module The `language` setting: one switch for the texts the server speaks, the system prompt,
 * the ASR language hint and the embedded TTS voice. Applied to the raw configuration before
 * validation, and only to keys the configuration leaves unset, so any key set explicitly wins.
 */
import { ESPEAK_LANGUAGE_VOICES } from '../../providers/espeak/options.ts';
import { asrTakesLanguageHint } from '../../providers/index.ts';

export const LANGUAGES = ['en', 'zh'] as const;
export type Language = (typeof LANGUAGES)[number];

interface LanguagePack {
  conversation: {
    greeting: string;
    apology: string;
    apologies: { llm: string; asr: string; tts: string };
    playbackError: string;
    goodbye: string;
    tooManyTurns: string;
  };
  systemPrompt: string;
  /** ISO-639-1 hint for OpenAI-compatible transcription. */
  asrLanguage: string;
  /** espeak-ng voice for the embedded TTS. */
  espeakVoice: string;
  /** What a device says when a reminder rings; `{text}` is what the user asked to be reminded of. */
  reminder: string;
}

const EN: LanguagePack = {
  conversation: {
    greeting: 'Hi! What can I do for you?',
    apology: 'Sorry, something went wrong on my side. Please try again.',
    apologies: {
      llm: 'Sorry, I cannot reach my language model. The server log and web page say what to set.',
      asr: 'Sorry, my speech recognition is not working. The server log says what to set.',
      tts: 'Sorry, my voice service is not working. The server log says what to set.',
    },
    playbackError: 'Sorry, I could not play {name}.',
    goodbye: 'Goodbye!',
    tooManyTurns: 'You are asking too fast. Please wait a moment.',
  },
  systemPrompt: [
    'You are Xiaozhi, a friendly voice assistant speaking through a small smart speaker.',
    'Answer in the language the user speaks. Keep answers short and conversational: one to three sentences,',
    'no markdown, no lists, no emoji in the text. Use the tools when they help; never invent tool results.',
    'Now: {datetime} ({timezone}).',
  ].join(' '),
  asrLanguage: 'en',
  espeakVoice: ESPEAK_LANGUAGE_VOICES.en,
  reminder: 'Reminder: {text}',
};

const ZH: LanguagePack = {
  conversation: {
    greeting: '你好！有什么可以帮你的？',
    apology: '抱歉，我这边出了点问题，请再试一次。',
    apologies: {
      llm: '抱歉，我连不上语言模型。请看服务器日志或网页上的提示进行设置。',
      asr: '抱歉，语音识别服务不可用。请看服务器日志里的提示进行设置。',
      tts: '抱歉，语音合成服务不可用。请看服务器日志里的提示进行设置。',
    },
    playbackError: '抱歉，无法播放{name}。',
    goodbye: '再见！',
    tooManyTurns: '你问得太快了，请稍等一会儿。',
  },
  systemPrompt: [
    '你是小智，一个通过小音箱说话的友好语音助手。',
    '请用中文回答，简短口语化，一到三句话；不要使用 markdown、列表或表情符号。',
    '需要时使用工具，不要编造工具结果。',
    '现在是 {datetime}（{timezone}）。',
  ].join(''),
  asrLanguage: 'zh',
  espeakVoice: ESPEAK_LANGUAGE_VOICES.zh,
  reminder: '提醒：{text}',
};

export const LANGUAGE_PACKS: Readonly<Record<Language, LanguagePack>> = { en: EN, zh: ZH };

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A copy of `raw` with the language's values filled into every language-dependent key left unset. */
export function applyLanguageDefaults(raw: unknown): unknown {
  if (!isObj(raw)) return raw;
  const lang = raw.language;
  // Unknown values are left for the schema to reject with the key named.
  if (lang !== 'zh' && lang !== 'en') return raw;
  const pack = LANGUAGE_PACKS[lang];
  const out: Obj = { ...raw };
  const conv: Obj = isObj(out.conversation) ? { ...out.conversation } : {};
  for (const [k, v] of Object.entries(pack.conversation)) {
    if (k === 'apologies')
      conv.apologies = { ...pack.conversation.apologies, ...(isObj(conv.apologies) ? conv.apologies : {}) };
    else conv[k] ??= v;
  }
  out.conversation = conv;
  const llm: Obj = isObj(out.llm) ? { ...out.llm } : {};
  llm.systemPrompt ??= pack.systemPrompt;
  out.llm = llm;
  if (isObj(out.asr) && asrTakesLanguageHint(out.asr.provider)) out.asr = { language: pack.asrLanguage, ...out.asr };
  if (out.tts === undefined) out.tts = { provider: 'espeak', voice: pack.espeakVoice };
  else if (isObj(out.tts) && out.tts.provider === 'espeak') out.tts = { voice: pack.espeakVoice, ...out.tts };
  return out;
}

/** A setting that does not fit the language, with what to set instead. */
export interface LanguageWarning {
  key: string;
  message: string;
}

/**
 * What the language cannot switch by itself. The embedded ASR (pocketsphinx) ships only an English
 * model, so with `zh` it would turn Chinese speech into English words: the operator is told at start,
 * unless they gave it a model of their own (`asr.hmm`).
 */
export function languageWarnings(config: {
  language: Language;
  asr: { provider: string; hmm?: string | undefined };
}): LanguageWarning[] {
  if (config.language !== 'zh' || config.asr.provider !== 'pocketsphinx' || config.asr.hmm !== undefined) return [];
  return [
    {
      key: 'asr.provider',
      message:
        'language is zh but asr.provider is pocketsphinx, whose model here is English only: Chinese speech will not be recognised. ' +
        'Set asr.provider: openai and asr.baseURL to an OpenAI-compatible ASR that knows Chinese, such as a SenseVoice or Whisper server.',
    },
  ];
}

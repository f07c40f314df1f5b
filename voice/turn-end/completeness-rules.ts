/**
 * @module The words that say a sentence is not over yet, per language: the one table the end of
 * turn reads (`completeness.ts` applies it). A transcript that stops on one of these is waited on
 * longer (`vad.unfinishedSilenceMs`); anything else that has words counts as complete and ends
 * the turn after `vad.completeSilenceMs`. The lists favour what people say to a voice assistant
 * and where they pause in it: after a preposition, a conjunction, an article, a filler, a verb
 * still waiting for its object, an open question word, or in the middle of a number.
 */

/** English: a transcript whose last word is one of these is unfinished. */
export const EN_UNFINISHED_LAST_WORDS: ReadonlySet<string> = new Set([
  // conjunctions and subordinators ("so" and "then" only alone: "I think so", "ok then")
  'and',
  'or',
  'but',
  'because',
  'cause',
  'since',
  'although',
  'though',
  'if',
  'unless',
  'until',
  'while',
  'whether',
  'than',
  'which',
  'nor',
  'plus',
  // prepositions (not "like": "what's the weather like" is a whole question)
  'to',
  'of',
  'in',
  'on',
  'at',
  'for',
  'with',
  'about',
  'from',
  'by',
  'into',
  'onto',
  'as',
  'via',
  'over',
  'under',
  'after',
  'before',
  'between',
  'through',
  'without',
  'near',
  'towards',
  'toward',
  'during',
  'per',
  'against',
  'around',
  // articles, determiners, possessives (not "this", "that": "what's that")
  'the',
  'a',
  'an',
  'my',
  'your',
  'his',
  'her',
  'their',
  'our',
  'its',
  'some',
  'any',
  'every',
  'each',
  'another',
  'very',
  // copulas and modals left hanging ("what is", "it will"); not "do" ("what should I do")
  'is',
  'are',
  'was',
  'were',
  'am',
  'be',
  'been',
  'can',
  'could',
  'will',
  'would',
  'should',
  'shall',
  'may',
  'might',
  'must',
  "what's",
  "it's",
  "there's",
  "i'm",
  "let's",
  "that's",
  "who's",
  "where's",
  "how's",
  "i'd",
  "i'll",
  // a subject or a verb still waiting for the rest (not "you": "thank you")
  'i',
  'want',
  'wanna',
  'gonna',
  'need',
  'tell',
  'turn',
  'remind',
  'give',
  // open question words (not "why": "why?" is a whole question)
  'what',
  'which',
  'how',
  'where',
  'when',
  'who',
  'whose',
  // fillers
  'um',
  'umm',
  'uh',
  'uhh',
  'uhm',
  'er',
  'erm',
  'hmm',
  'mm',
  'ah',
  'eh',
]);

/** English words that open a sentence: said alone they wait for the rest ("so …", "well …"). */
export const EN_LONE_OPENERS: ReadonlySet<string> = new Set([
  'so',
  'well',
  'now',
  'then',
  'also',
  'actually',
  'basically',
  'like',
  'please',
  'hey',
  'ok so',
  'and then',
  'and also',
  'you know',
  'the thing is',
]);

/** English endings of two words that leave the sentence open ("you know", "tell me", "can you"). */
export const EN_UNFINISHED_LAST_PAIRS: ReadonlySet<string> = new Set([
  'you know',
  'i mean',
  'kind of',
  'sort of',
  'such as',
  'how many',
  'how much',
  'what kind',
  'can you',
  'could you',
  'would you',
  'will you',
  'do you',
  'can i',
  'could i',
  'tell me',
  'remind me',
  'give me',
  'show me',
  'let me',
  'i think',
  'i guess',
]);

/**
 * Prepositions a short question may end on ("where are you from", "what is it for"): after a
 * question word and within `EN_STRANDED_MAX_WORDS` words they close the sentence.
 */
export const EN_STRANDED_PREPOSITIONS: ReadonlySet<string> = new Set([
  'from',
  'for',
  'to',
  'about',
  'with',
  'on',
  'in',
  'at',
  'by',
]);
export const EN_QUESTION_OPENERS: ReadonlySet<string> = new Set([
  'what',
  "what's",
  'who',
  "who's",
  'where',
  "where's",
  'which',
  'how',
  "how's",
]);
export const EN_STRANDED_MAX_WORDS = 4;

/** English number words: a transcript ending in two or more of these (or digits) is a number being dictated. */
export const EN_NUMBER_WORDS: ReadonlySet<string> = new Set([
  'zero',
  'oh',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'double',
  'triple',
  'point',
  'dash',
  'hundred',
  'thousand',
]);

/**
 * Chinese: endings that leave the sentence open (matched longest first). Conjunctions, fillers,
 * the structural particle 的 (after the "complete" overrides: 好的, 是的), prepositions and
 * co-verbs, and a measure word left without its noun. Single-character verbs are not here:
 * 不要, 也是, 好听 end sentences.
 */
export const ZH_UNFINISHED_ENDINGS: readonly string[] = [
  // conjunctions
  '因为',
  '所以',
  '但是',
  '可是',
  '然后',
  '而且',
  '还有',
  '或者',
  '如果',
  '虽然',
  '不过',
  '并且',
  '以及',
  '接着',
  '比如',
  '另外',
  '就是说',
  '除了',
  '总之',
  '和',
  '跟',
  '与',
  '及',
  // fillers
  '那个',
  '这个',
  '嗯',
  '呃',
  '额',
  '就是',
  '那么',
  // structural particles
  '的',
  '地',
  // prepositions and co-verbs
  '关于',
  '为了',
  '按照',
  '根据',
  '对于',
  '在',
  '把',
  '被',
  '给',
  '从',
  '向',
  '往',
  '比',
  '替',
  '离',
  // someone asking, before saying what for
  '我想',
  '我要',
  '想要',
  '帮我',
  '请你',
  '告诉我',
  '给我',
  '提醒我',
  '查一下',
  '讲一个',
  '来一首',
  '唱一首',
  '放一首',
  '我想听',
  '想听',
  '我叫',
  '叫做',
  '这是',
  '那是',
  '我是',
  '就是',
  // a measure word left without its noun
  '一个',
  '一首',
  '一些',
  '几个',
  '哪个',
  '这些',
  '那些',
];

/**
 * Chinese verbs that want an object: unfinished at the end of a clause unless the object came
 * first (把灯打开) or the verb is a command on its own (继续播放, 不要关闭).
 */
export const ZH_VERBS_WANTING_OBJECT: readonly string[] = ['打开', '关掉', '关闭', '播放', '设置', '调到', '换成'];
export const ZH_OBJECT_BEFORE_VERB = /把|将|继续|停止|暂停|开始|不|别|没/u;

/** Chinese: a transcript that is only these (a time or a topic word said first) waits for the rest. */
export const ZH_LONE_OPENERS: ReadonlySet<string> = new Set([
  '今天',
  '明天',
  '后天',
  '昨天',
  '现在',
  '早上',
  '上午',
  '中午',
  '下午',
  '晚上',
  '今晚',
  '明早',
  '我',
  '你',
  '我们',
  '请问',
  '那么',
  '然后',
  '还有',
  '对了',
  '还有就是',
  '小智',
]);

/**
 * Chinese endings that close a sentence whatever comes before: final particles and question
 * words at the end. They win over the "topic phrase" rule below ("北京的天气怎么样").
 */
export const ZH_COMPLETE_ENDINGS: readonly string[] = [
  '怎么样',
  '怎么办',
  '为什么',
  '什么',
  '多少',
  '几点',
  '哪里',
  '哪儿',
  '是谁',
  '谁',
  '如何',
  '好不好',
  '行不行',
  '可以吗',
  '对不对',
  '吗',
  '呢',
  '吧',
  '了',
  '啊',
  '呀',
  '嘛',
  '么',
  '哦',
  '哈',
  '啦',
  '好的',
  '是的',
  '对的',
  '真的',
  '会的',
  '可以的',
  '没有的',
  '行的',
];

/**
 * Characters that make a Chinese clause a statement (a verb or a copula): "X的Y" with none of
 * them is a topic still waiting for its comment ("今天的天气 … 怎么样", "我的名字 … 是小明").
 */
export const ZH_PREDICATE_CHARS =
  '是有要想喜爱在去来做吃喝看听说讲放开关买叫知觉得会能可让帮给用到找查订问打玩学写读睡走跑哭笑变成像';

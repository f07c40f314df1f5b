/**
 * The completeness rules as a table: each row is a transcript and the verdict the end of turn
 * waits by. Unfinished rows are where people pause mid-sentence; complete rows are whole things
 * said to an assistant that the rules must not hold for the long wait (each of them was a trap for
 * an earlier, cruder list: "thank you", "what's that", "好的", "不要", "把灯打开").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judgeCompleteness, type Completeness } from '../../../../voice/turn-end/completeness.ts';

const TABLE: ReadonlyArray<[string, Completeness]> = [
  // nothing yet
  ['', 'unknown'],
  ['  ', 'unknown'],
  ['。', 'unknown'],
  // English, unfinished
  ['set an alarm for', 'unfinished'],
  ['what is the capital of', 'unfinished'],
  ['remind me to', 'unfinished'],
  ['play some music by', 'unfinished'],
  ['I want to go to the park and', 'unfinished'],
  ['turn on the', 'unfinished'],
  ['can you', 'unfinished'],
  ['could you tell me', 'unfinished'],
  ['what is', 'unfinished'],
  ["what's", 'unfinished'],
  ['tell me a joke about', 'unfinished'],
  ['um', 'unfinished'],
  ['I was thinking uh', 'unfinished'],
  ['so', 'unfinished'],
  ['well', 'unfinished'],
  ['my number is 0 1 7', 'unfinished'],
  ['my number is oh one seven six', 'unfinished'],
  ['do you know what', 'unfinished'],
  ['how many', 'unfinished'],
  ['because', 'unfinished'],
  ['it is very', 'unfinished'],
  ['I want', 'unfinished'],
  ["what's the weather like in", 'unfinished'],
  ['What is the capital of.', 'unfinished'],
  // English, complete
  ["what's the weather like", 'complete'],
  ['what is the capital of France', 'complete'],
  ['thank you', 'complete'],
  ["what's that", 'complete'],
  ['I think so', 'complete'],
  ['ok then', 'complete'],
  ['play some music please', 'complete'],
  ['what should I do', 'complete'],
  ['where are you from', 'complete'],
  ['what is it for', 'complete'],
  ['how are you', 'complete'],
  ['why', 'complete'],
  ['tell me more', 'complete'],
  ['stop', 'complete'],
  ['wake me up at seven', 'complete'],
  ['set a timer for 5 minutes.', 'complete'],
  ['Turn on the light in the kitchen?', 'complete'],
  ['I love you', 'complete'],
  // Chinese, unfinished
  ['今天的天气', 'unfinished'],
  ['北京的天气', 'unfinished'],
  ['我的名字', 'unfinished'],
  ['因为', 'unfinished'],
  ['我今天有点累因为', 'unfinished'],
  ['然后', 'unfinished'],
  ['那个', 'unfinished'],
  ['帮我', 'unfinished'],
  ['我想听', 'unfinished'],
  ['给我讲一个', 'unfinished'],
  ['帮我打开', 'unfinished'],
  ['播放', 'unfinished'],
  ['明天', 'unfinished'],
  ['请问', 'unfinished'],
  ['我的电话是一三八', 'unfinished'],
  ['我想去北京和', 'unfinished'],
  ['今天的天气。', 'unfinished'],
  ['嗯，我想问一下，那个', 'unfinished'],
  // Chinese, complete
  ['今天的天气怎么样', 'complete'],
  ['北京的天气怎么样？', 'complete'],
  ['现在几点了', 'complete'],
  ['好的', 'complete'],
  ['是的', 'complete'],
  ['不要', 'complete'],
  ['真好听', 'complete'],
  ['把灯打开', 'complete'],
  ['帮我把客厅的灯关掉', 'complete'],
  ['继续播放', 'complete'],
  ['我喜欢你的声音', 'complete'],
  ['给我讲一个笑话', 'complete'],
  ['明天会下雨吗', 'complete'],
  ['你叫什么名字', 'complete'],
  ['我想听周杰伦的歌', 'complete'],
  ['三点', 'complete'],
  ['我今年十八岁', 'complete'],
  ['播放音乐', 'complete'],
  ['声音大一点', 'complete'],
  ['谢谢', 'complete'],
  // mixed: Han characters choose the Chinese rules
  ['播放 Taylor Swift 的', 'unfinished'],
  ['播放 Taylor Swift 的歌', 'complete'],
];

describe('judgeCompleteness', () => {
  for (const [text, verdict] of TABLE) {
    it(`${JSON.stringify(text)} is ${verdict}`, () => {
      assert.equal(judgeCompleteness(text), verdict);
    });
  }
});

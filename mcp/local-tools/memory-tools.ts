/**
 * @module Built-in tools over one device's memory: `remember` a fact the user states, `forget`
 * facts by their words (or everything the device remembers with its assistant), `list_memories`.
 * They are made per session around that device's memory, so a call can only ever reach the
 * memory of the device that is talking.
 */
import type { LocalTool } from '../contract/local-tool.ts';
import { errorResult, textResult } from '../contract/tool-source.ts';

/** The device's memory as the tools act on it. */
export interface MemoryToolTarget {
  /** False: this assistant keeps no facts (its memory mode). */
  keepsFacts(): boolean;
  remember(fact: string): Promise<boolean>;
  /** Facts containing `words` removed; how many. */
  forget(words: string): Promise<number>;
  /** Facts, summary and stored turns removed. */
  forgetAll(): Promise<void>;
  list(): Promise<string[]>;
}

export const MEMORY_TOOL_NAMES = ['remember', 'forget', 'list_memories'] as const;

const OFF = 'Memory is off for this assistant: nothing is remembered.';

export function memoryTools(target: MemoryToolTarget): LocalTool[] {
  return [
    {
      name: 'remember',
      description:
        'Remember a fact the user explicitly asks you to remember about them or their home (e.g. "remember that my daughter is called Mia"). Store it in the user\'s own words, in the third person if natural. It is available in later conversations with this device.',
      inputSchema: {
        type: 'object',
        properties: { fact: { type: 'string', description: 'The fact to remember, short.' } },
        required: ['fact'],
      },
      async handler(args) {
        if (!target.keepsFacts()) return textResult(OFF);
        const fact = typeof args.fact === 'string' ? args.fact.trim() : '';
        if (fact === '') return errorResult('fact is empty');
        return (await target.remember(fact)) ? textResult('Remembered.') : errorResult('could not remember that');
      },
    },
    {
      name: 'forget',
      description:
        'Forget what the user asks you to forget. Pass `what`: a word or words of the remembered fact to remove; pass `everything: true` when the user asks you to forget everything (all remembered facts and the conversation history of this device).',
      inputSchema: {
        type: 'object',
        properties: {
          what: { type: 'string', description: 'Words of the fact(s) to forget.' },
          everything: { type: 'boolean', description: 'Forget all facts and the history of this device.' },
        },
      },
      async handler(args) {
        if (args.everything === true) {
          await target.forgetAll();
          return textResult('Forgot everything.');
        }
        const what = typeof args.what === 'string' ? args.what.trim() : '';
        if (what === '') return errorResult('say what to forget, or everything: true');
        const n = await target.forget(what);
        return textResult(n === 0 ? 'Nothing remembered matched that.' : `Forgot ${n} fact${n === 1 ? '' : 's'}.`);
      },
    },
    {
      name: 'list_memories',
      description: 'List the facts remembered for this device, when the user asks what you remember about them.',
      inputSchema: { type: 'object', properties: {} },
      async handler() {
        if (!target.keepsFacts()) return textResult(OFF);
        const facts = await target.list();
        return textResult(facts.length === 0 ? 'Nothing is remembered.' : facts.map((f) => `- ${f}`).join('\n'));
      },
    },
  ];
}

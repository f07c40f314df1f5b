/**
 * One fuzzed connection: the Protocol-Version header it claims, then up to 24 messages, mostly
 * after a valid hello and a listen start so that frames reach the decoder, the VAD and the turn
 * logic instead of being dropped at the door. Fewer messages than the control-message burst, so
 * the outcome model (inputs.ts) needs no rate limit.
 */
import fc from 'fast-check';
import { shortPrint, type ConnectionScript, type FuzzInput } from './inputs.ts';
import { badUtf8Text, textMessage, validHello } from './json-arbitraries.ts';
import { binaryFrame } from './frame-arbitraries.ts';

const listenStart = fc
  .constantFrom('auto', 'manual', 'realtime')
  .map(
    (mode): FuzzInput =>
      shortPrint({ kind: 'text', text: JSON.stringify({ type: 'listen', state: 'start', mode }), cls: 'other' }),
  );

const anyInput: fc.Arbitrary<FuzzInput> = fc.oneof(
  { weight: 20, arbitrary: textMessage },
  { weight: 20, arbitrary: binaryFrame },
  // Rare for the same reason as frames over the limit: the connection ends there.
  { weight: 1, arbitrary: badUtf8Text },
);

export const connectionScript: fc.Arbitrary<ConnectionScript> = fc
  .record({
    headerVersion: fc.constantFrom<1 | 2 | 3>(1, 2, 3),
    hello: fc.option(validHello, { freq: 4 }),
    listen: fc.option(listenStart, { freq: 2 }),
    rest: fc.array(anyInput, { minLength: 1, maxLength: 22 }),
  })
  .map(({ headerVersion, hello, listen, rest }) => ({
    headerVersion,
    // freq 4: absent one time in four, so scripts without a hello are fuzzed too.
    inputs: [...(hello ? [hello] : []), ...(listen ? [listen] : []), ...rest],
  }));

/**
 * The fake OpenAI server as a vision model: an `image_url` data-URL part in the last user message
 * reaches a rule as decoded bytes (so a test can check the photo arrived intact), and `onImage`
 * answers only requests that carry one.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeText, onImage, startFakeOpenAi, type FakeImage, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { CAMERA_PHOTO } from '../../fixtures/firmware/photos.ts';

describe('the fake vision model', () => {
  let fake: FakeOpenAi;
  before(async () => {
    fake = await startFakeOpenAi();
  });
  after(() => fake.close());

  const ask = async (content: unknown): Promise<string> => {
    const r = await fetch(`${fake.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'vision-fake', messages: [{ role: 'user', content }] }),
    });
    const body = (await r.json()) as { choices: Array<{ message: { content: string } }> };
    return body.choices[0]?.message.content ?? '';
  };

  test('an image part is decoded for the rule; the rule answers only with an image', async () => {
    const seen: FakeImage[][] = [];
    fake.rule(
      onImage((v) => {
        seen.push(v.images);
        return fakeText(`I see ${v.images.length} picture(s); you asked: ${v.lastUserText}`);
      }),
    );
    const dataUrl = `data:image/jpeg;base64,${CAMERA_PHOTO.toString('base64')}`;
    const answer = await ask([
      { type: 'text', text: 'What do you see?' },
      { type: 'image_url', image_url: { url: dataUrl } },
    ]);
    assert.equal(answer, 'I see 1 picture(s); you asked: What do you see?');
    assert.equal(seen[0]?.[0]?.mimeType, 'image/jpeg');
    assert.deepEqual(seen[0]?.[0]?.bytes, CAMERA_PHOTO, 'the JPEG arrived byte for byte');
    assert.equal(await ask('no picture here'), 'You said: no picture here.', 'text alone falls through to the default');
    assert.deepEqual(fake.requests.at(-1)?.body.messages[0]?.content, 'no picture here');
  });
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDeviceMessage, serverHello, ServerMessageSchema } from '../../../protocol/messages.ts';

describe('device messages', () => {
  test('the firmware byte strings parse (exact strings from protocol.cc)', () => {
    const sid = '5b0c4d2a-0000-4000-8000-000000000001';
    const cases = [
      `{"session_id":"${sid}","type":"listen","state":"start","mode":"auto"}`,
      `{"session_id":"${sid}","type":"listen","state":"start","mode":"manual"}`,
      `{"session_id":"${sid}","type":"listen","state":"start","mode":"realtime"}`,
      `{"session_id":"${sid}","type":"listen","state":"stop"}`,
      `{"session_id":"${sid}","type":"listen","state":"detect","text":"你好小智"}`,
      `{"session_id":"${sid}","type":"abort"}`,
      `{"session_id":"${sid}","type":"abort","reason":"wake_word_detected"}`,
      `{"session_id":"${sid}","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"true"}],"isError":false}}}`,
      `{"session_id":"","type":"goodbye"}`,
      '{"type":"hello","version":1,"features":{"mcp":true,"aec":true,"glyph_push":true},"text_font":{"bundle":"noto-v1","charset":"common","size":20,"bpp":4},"transport":"websocket","audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}',
      '{"session_id":"","type":"iot","update":true,"descriptors":[{"name":"AudioSpeaker"}]}',
    ];
    for (const c of cases) {
      const r = parseDeviceMessage(c);
      assert.ok(r.ok, `${c} → ${r.ok ? '' : r.error}`);
    }
  });

  test('listen start without mode defaults to auto', () => {
    const r = parseDeviceMessage('{"type":"listen","state":"start"}');
    assert.ok(r.ok && r.message.type === 'listen' && r.message.state === 'start' && r.message.mode === 'auto');
  });

  test('errors name the problem', () => {
    const bad = parseDeviceMessage('{"type":"listen","state":"start","mode":"x"}');
    assert.ok(!bad.ok);
    assert.equal(bad.kind, 'invalid');
    assert.match(bad.error, /mode/);
    const unknown = parseDeviceMessage('{"type":"nope"}');
    assert.ok(!unknown.ok && unknown.kind === 'unknown_type');
    const json = parseDeviceMessage('{');
    assert.ok(!json.ok && json.kind === 'json');
    const big = parseDeviceMessage(JSON.stringify({ type: 'listen', state: 'detect', text: 'x'.repeat(5000) }));
    assert.ok(!big.ok && big.kind === 'invalid');
  });

  test('server hello always carries transport and validates against the schema', () => {
    const h = serverHello('abc-123', 24000, 60);
    assert.equal(h.transport, 'websocket');
    assert.ok(ServerMessageSchema.safeParse(h).success);
    assert.ok(
      ServerMessageSchema.safeParse({ type: 'tts', session_id: 'x', state: 'sentence_start', text: 'hi' }).success,
    );
    assert.equal(
      ServerMessageSchema.safeParse({ type: 'tts', session_id: 'x', state: 'sentence_start' }).success,
      false,
    );
  });
});

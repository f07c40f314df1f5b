/**
 * `/readyz` once told anyone the remote error texts, child PIDs and provider
 * host:port. A stranger now gets the plain status; details need loopback (not proxied) or the
 * admin secret.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { healthRoutes, endpointCheck, type ReadinessCheck } from '../../../server/health-route.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';

const SECRET = 'admin-secret-for-readyz-test';

describe('/readyz details are gated', () => {
  let t: TestApp;
  before(async () => {
    const checks = [endpointCheck('llm', 'http://127.0.0.1:9/v1') as ReadinessCheck];
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { adminSecret: SECRET } },
      plugins: [healthRoutes({ ready: () => true, checks, adminSecret: SECRET })],
    });
  });
  after(() => t.close());

  test('a remote caller without the secret gets only the status', async () => {
    const res = await t.app.fastify.inject({ method: 'GET', url: '/readyz', remoteAddress: '203.0.113.7' });
    assert.equal(res.statusCode, 200);
    // The provider problems stay public (config keys only): the browser page's banner needs them.
    assert.deepEqual(res.json(), { status: 'degraded', problems: [] });
    assert.ok(!res.body.includes('127.0.0.1:9'));
  });

  test('a remote caller with a wrong secret gets only the status', async () => {
    const res = await t.app.fastify.inject({
      method: 'GET',
      url: '/readyz',
      remoteAddress: '203.0.113.7',
      headers: { authorization: 'Bearer nope' },
    });
    assert.deepEqual(Object.keys(res.json<object>()), ['status', 'problems']);
  });

  test('a remote caller with the admin secret gets the details', async () => {
    const res = await t.app.fastify.inject({
      method: 'GET',
      url: '/readyz',
      remoteAddress: '203.0.113.7',
      headers: { authorization: `Bearer ${SECRET}` },
    });
    const body = res.json<{ checks: Array<{ name: string; target: string }> }>();
    assert.equal(body.checks[0]?.target, '127.0.0.1:9');
  });

  test('guessing the secret spends the budget of the address: after 5 wrong ones even the right one shows nothing there, while another address still can', async () => {
    const ask = (from: string, secret: string) =>
      t.app.fastify.inject({
        method: 'GET',
        url: '/readyz',
        remoteAddress: from,
        headers: { authorization: `Bearer ${secret}` },
      });
    for (let i = 0; i < 5; i++)
      assert.deepEqual(
        Object.keys((await ask('203.0.113.50', `wrong-secret-${i}`)).json<object>()),
        ['status', 'problems'],
        `guess ${i + 1}`,
      );
    assert.deepEqual(
      Object.keys((await ask('203.0.113.50', SECRET)).json<object>()),
      ['status', 'problems'],
      'the right secret is not told apart once the address is over its budget',
    );
    assert.ok(
      Array.isArray((await ask('203.0.113.51', SECRET)).json<{ checks?: unknown }>().checks),
      'another address has its own budget',
    );
  });

  test('loopback gets the details over a real port, but not when proxied (X-Forwarded-For)', async () => {
    const direct = (await (await fetch(`${t.httpUrl}/readyz`)).json()) as Record<string, unknown>;
    assert.ok(Array.isArray(direct.checks));
    const proxied = (await (
      await fetch(`${t.httpUrl}/readyz`, { headers: { 'x-forwarded-for': '198.51.100.2' } })
    ).json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(proxied), ['status', 'problems']);
  });
});

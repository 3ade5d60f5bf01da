// Rate limits through the official npm `openai` client: a key over its
// requests per minute gets 429, which the SDK raises as RateLimitError,
// with the gateway's Retry-After and X-RateLimit-* headers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const base = process.env.SWITCHYARD_URL;

test('a key over its requests per minute gets RateLimitError', async () => {
  // A fresh key limited to 2 requests a minute, made with the management API.
  const res = await fetch(`${base}/keys`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${process.env.SWITCHYARD_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'node-rate-limited', rate_limits: { requests_per_minute: 2 } }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const { key } = await res.json();
  const client = new OpenAI({ baseURL: base, apiKey: key, maxRetries: 0 });
  const ask = () => client.chat.completions.create({ model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] });

  for (let i = 0; i < 2; i++) {
    const { data, response } = await ask().withResponse();
    assert.match(data.choices[0].message.content, /You said: hi/);
    assert.equal(response.headers.get('x-ratelimit-limit'), '2');
    assert.equal(response.headers.get('x-ratelimit-remaining'), String(1 - i));
  }
  await assert.rejects(ask(), (err) => {
    assert.ok(err instanceof OpenAI.RateLimitError, `not a RateLimitError: ${err}`);
    assert.equal(err.status, 429);
    assert.match(err.message, /Rate limit exceeded: key requests per minute/);
    assert.equal(err.error?.metadata?.reason, 'rate_limited');
    assert.ok(Number(err.headers.get('retry-after')) >= 1, `retry-after ${err.headers.get('retry-after')}`);
    assert.equal(err.headers.get('x-ratelimit-remaining'), '0');
    return true;
  });
});

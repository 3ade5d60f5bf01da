// LangChain's OpenRouter chat model (@langchain/openrouter), unchanged but
// for base URL and key, against a running gateway
// (examples/clients/openrouter_test.go starts it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenRouter } from '@langchain/openrouter';

const model = (m) => new ChatOpenRouter({ model: m, baseURL: process.env.SWITCHYARD_URL, apiKey: process.env.SWITCHYARD_KEY, maxRetries: 0 });

test('invoke', async () => {
  const res = await model('test/chat').invoke('hello from langchain');
  assert.match(String(res.content), /You said: hello from langchain/);
  assert.ok(res.usage_metadata?.output_tokens > 0, JSON.stringify(res.usage_metadata));
});

test('stream', async () => {
  let text = '';
  for await (const chunk of await model('test/chat').stream('stream from langchain')) text += chunk.content;
  assert.match(text, /You said: stream from langchain/);
});

test('unknown model rejects', async () => {
  await assert.rejects(model('nobody/nothing').invoke('x'), (err) => /404|nobody\/nothing/.test(String(err?.message ?? err)));
});

// The fusion plugin through the npm `openai` client, unchanged: `plugins`
// is an extra body field; the answer comes back JSON or streamed (after
// keep-alive comments the client ignores), with the usage of every call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});

const request = {
  model: 'test/chat',
  messages: [{ role: 'user', content: 'Is Pluto a planet?' }],
  plugins: [{ id: 'fusion', analysis_models: ['test/chat', 'test/chat'], tools: [] }],
};

test('fusion plugin (JSON)', async () => {
  const res = await client.chat.completions.create(request);
  assert.match(res.choices[0].message.content, /You said: Is Pluto a planet\?/);
  // Two members, the judge and the final answer: more than one call's tokens.
  assert.ok(res.usage.prompt_tokens > 0 && res.usage.completion_tokens > 0);
  assert.ok(res.usage.cost > 0);
  assert.equal(res.usage.cost_details.sub_requests, res.usage.cost);
});

test('fusion plugin (stream)', async () => {
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) text += c.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.match(text, /You said/);
  assert.ok(usage && usage.cost > 0, JSON.stringify(usage));
});

// A server-tool request through the official npm `openai` client, unchanged:
// the gateway runs service:datetime itself (the offline demo model calls it)
// and the client gets one answer, JSON or streamed.
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
  messages: [{ role: 'user', content: 'What time is it in Tokyo? tz:Asia/Tokyo' }],
  tools: [{ type: 'service:datetime' }],
  max_tool_calls: 2,
};

test('server tool (JSON)', async () => {
  const res = await client.chat.completions.create(request);
  assert.equal(res.choices[0].finish_reason, 'stop');
  assert.match(res.choices[0].message.content, /"timezone":"Asia\/Tokyo"/);
  assert.equal(res.choices[0].message.tool_calls, undefined);
  assert.equal(res.usage.server_tool_use_details.tool_calls_executed, 1);
  assert.ok(res.usage.cost > 0);
});

test('server tool (streaming)', async () => {
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) text += c.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.match(text, /"timezone":"Asia\/Tokyo"/);
  assert.equal(usage.server_tool_use_details.tool_calls_executed, 1);
});

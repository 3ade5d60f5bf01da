// web-fetch through the official npm `openai` client, unchanged: the
// plugin form (an extra body field) and the service:web_fetch server tool,
// both on the offline demo page built into the module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});

const page = 'https://switchyard.demo/web-fetch/tides';

test('web-fetch plugin (JSON, service metadata)', async () => {
  const res = await client.chat.completions.create(
    {
      model: 'test/chat',
      messages: [{ role: 'user', content: `What does ${page} say about Dover?` }],
      plugins: [{ id: 'web-fetch', max_content_tokens: 2000 }],
    },
    { headers: { 'X-Service-Metadata': 'enabled' } },
  );
  const stage = res.service_metadata.pipeline.find((s) => s.name === 'web-fetch');
  assert.equal(stage.data.fetched, 1);
  assert.equal(stage.data.pages[0].url, page);
});

test('service:web_fetch tool (streaming)', async () => {
  const stream = await client.chat.completions.create({
    model: 'test/chat',
    messages: [{ role: 'user', content: `Please fetch ${page}` }],
    tools: [{ type: 'service:web_fetch', parameters: { max_content_tokens: 400 } }],
    max_tool_calls: 2,
    stream: true,
  });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) text += c.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.match(text, /"status":"completed"/);
  assert.match(text, /Tide tables for beginners \(Switchyard demo page\)/);
  assert.match(text, /\| Dover \| 06:12 \| 6\.4 m \|/);
  assert.equal(usage.server_tool_use_details.tool_calls_executed, 1);
});

// The router model ids through the official npm `openai` client,
// unchanged: switchyard/auto and switchyard/pareto-code, JSON and
// streaming; the router's choice shows in the answer and its model.
// Options go in `plugins`, an extra body field the client passes on.
// (TestNodeOpenAISDKRouters in ../../routers_test.go starts the gateway.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});

const answers = { 'test/cheap': 'alpha answers', 'test/claude': 'anthropic answers', 'test/gemini': 'gemini answers' };
const messages = [{ role: 'user', content: 'Fix this Python traceback: KeyError in my function' }];

test('switchyard/auto, quality first, JSON', async () => {
  const res = await client.chat.completions.create(
    { model: 'switchyard/auto', messages, plugins: [{ id: 'auto-router', cost_quality_tradeoff: 0 }] },
    { headers: { 'X-Service-Metadata': 'enabled' } },
  );
  assert.equal(res.model, 'test/claude');
  assert.match(res.choices[0].message.content, new RegExp(answers['test/claude']));
  assert.equal(res.service_metadata.strategy, 'auto');
  assert.equal(res.service_metadata.requested, 'switchyard/auto');
  assert.equal(res.service_metadata.pipeline[0].data.task_family, 'coding');
  assert.ok(Number(res.usage.cost) > 0);
});

test('switchyard/auto, cheapest, streamed', async () => {
  const stream = await client.chat.completions.create({
    model: 'switchyard/auto', messages, stream: true, plugins: [{ id: 'auto-router', cost_quality_tradeoff: 10 }],
  });
  let text = '';
  let model = '';
  for await (const chunk of stream) {
    model = chunk.model;
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(model, 'test/cheap');
  assert.match(text, new RegExp(answers['test/cheap']));
});

test('switchyard/pareto-code, medium tier, JSON', async () => {
  const res = await client.chat.completions.create(
    { model: 'switchyard/pareto-code', messages, plugins: [{ id: 'pareto-router', min_coding_score: 0.5 }] },
    { headers: { 'X-Service-Metadata': 'enabled' } },
  );
  assert.equal(res.model, 'test/gemini');
  assert.match(res.choices[0].message.content, new RegExp(answers['test/gemini']));
  assert.equal(res.service_metadata.strategy, 'pareto');
  assert.equal(res.service_metadata.pipeline[0].data.tier_used, 'medium');
});

test('switchyard/pareto-code, low tier, streamed', async () => {
  const stream = await client.chat.completions.create({
    model: 'switchyard/pareto-code', messages, stream: true, plugins: [{ id: 'pareto-router', min_coding_score: 0.1 }],
  });
  let text = '';
  let model = '';
  for await (const chunk of stream) {
    model = chunk.model;
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(model, 'test/cheap');
  assert.match(text, new RegExp(answers['test/cheap']));
});

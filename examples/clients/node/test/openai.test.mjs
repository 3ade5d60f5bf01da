// The official npm `openai` client, unchanged, against a running gateway.
// SWITCHYARD_URL (…/api/v1) and SWITCHYARD_KEY are set by
// examples/clients/clients_test.go, which starts the gateway first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});

test('chat completion', async () => {
  const res = await client.chat.completions.create({
    model: 'test/chat',
    messages: [{ role: 'user', content: 'hello from node' }],
  });
  assert.equal(res.object, 'chat.completion');
  assert.equal(res.model, 'test/chat');
  assert.match(res.id, /^gen-/);
  assert.match(res.choices[0].message.content, /You said: hello from node/);
  assert.equal(res.choices[0].finish_reason, 'stop');
  assert.ok(res.usage.total_tokens > 0);
});

test('streaming chat completion', async () => {
  const stream = await client.chat.completions.create({
    model: 'test/chat',
    stream: true,
    messages: [{ role: 'user', content: 'stream from node' }],
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      finish = c.finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.match(text, /You said: stream from node/);
  assert.equal(finish, 'stop');
  assert.ok(usage && usage.completion_tokens > 0, 'usage arrives on the final chunk');
});

test('embeddings (the client asks for base64 and decodes it)', async () => {
  const res = await client.embeddings.create({ model: 'test/embed', input: ['one', 'two'] });
  assert.equal(res.data.length, 2);
  assert.equal(res.data[0].embedding.length, 16);
  assert.equal(res.data[1].index, 1);
  assert.ok(res.data[0].embedding.every((x) => typeof x === 'number' && Number.isFinite(x)));
  const norm = Math.sqrt(res.data[0].embedding.reduce((s, x) => s + x * x, 0));
  assert.ok(Math.abs(norm - 1) < 1e-3, `unit vector, got norm ${norm}`);
});

test('embeddings as floats', async () => {
  const res = await client.embeddings.create({ model: 'test/embed', input: 'one', encoding_format: 'float' });
  assert.equal(res.data[0].embedding.length, 16);
});

test('errors surface as APIError with the gateway status', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'nobody/nothing', messages: [{ role: 'user', content: 'x' }] }),
    (err) => err instanceof OpenAI.APIError && err.status === 404 && /nobody\/nothing/.test(err.message),
  );
  const bad = new OpenAI({ baseURL: process.env.SWITCHYARD_URL, apiKey: 'sk-wrong-key-000000000000', maxRetries: 0 });
  await assert.rejects(
    bad.chat.completions.create({ model: 'test/chat', messages: [{ role: 'user', content: 'x' }] }),
    (err) => err instanceof OpenAI.AuthenticationError && err.status === 401,
  );
});

// What the SDK's own request types allow and the gateway once refused (issue 9).
test('null for optional fields', async () => {
  const res = await client.chat.completions.create({
    model: 'test/chat',
    messages: [{ role: 'user', content: 'nulls from node', name: null }],
    stream: null, metadata: null, modalities: null, response_format: null,
    tools: null, tool_choice: null, user: null,
  });
  assert.match(res.choices[0].message.content, /You said: nulls from node/);
});

test('stream_options.include_obfuscation', async () => {
  const stream = await client.chat.completions.create({
    model: 'test/chat',
    stream: true,
    stream_options: { include_usage: true, include_obfuscation: false },
    messages: [{ role: 'user', content: 'obfuscation' }],
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.match(text, /You said: obfuscation/);
});

test('custom tools (dropped for an endpoint that does not take them)', async () => {
  const res = await client.chat.completions.create({
    model: 'test/chat',
    messages: [{ role: 'user', content: 'custom tool' }],
    tools: [
      { type: 'function', function: { name: 'get_weather', description: null, parameters: null } },
      { type: 'custom', custom: { name: 'code_exec', description: 'runs code', format: { type: 'grammar', grammar: { definition: 'start: /.+/', syntax: 'lark' } } } },
    ],
  });
  assert.equal(res.object, 'chat.completion');
});

test('legacy function messages', async () => {
  const res = await client.chat.completions.create({
    model: 'test/chat',
    messages: [
      { role: 'user', content: 'weather in Oslo?' },
      { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
      { role: 'function', name: 'get_weather', content: '-3 C' },
    ],
  });
  assert.equal(res.object, 'chat.completion');
});

test('max_tokens above the model maximum is clamped, not "model not found"', async () => {
  const res = await client.chat.completions.create({
    model: 'test/chat', max_tokens: 100000, messages: [{ role: 'user', content: 'long' }],
  });
  assert.equal(res.object, 'chat.completion');
});

test('embeddings from token ids (as LangChain sends them)', async () => {
  const res = await client.embeddings.create({ model: 'test/embed', input: [[15339, 1917], [9906]] });
  assert.equal(res.data.length, 2);
  const one = await client.embeddings.create({ model: 'test/embed', input: [15339, 1917] });
  assert.equal(one.data.length, 1);
});

test('a model name without a vendor: 400 with close matches', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'x' }] }),
    (err) => err instanceof OpenAI.BadRequestError && /did you mean test\/chat/.test(err.message),
  );
});

// The official npm `openai` client's Responses API (client.responses),
// unchanged, against a running gateway (POST /api/v1/responses, a
// translation over the chat request core). SWITCHYARD_URL and
// SWITCHYARD_KEY are set by examples/clients/clients_test.go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});

const tools = [{
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
}];

test('responses.create', async () => {
  const res = await client.responses.create({
    model: 'test/chat',
    instructions: 'be brief',
    input: 'hello from responses',
  });
  assert.equal(res.object, 'response');
  assert.equal(res.status, 'completed');
  assert.match(res.id, /^resp_/);
  // output_text is the SDK's own: it joins the output_text parts.
  assert.match(res.output_text, /You said: hello from responses/);
  assert.equal(res.output[0].type, 'message');
  assert.ok(res.usage.input_tokens > 0 && res.usage.output_tokens > 0);
  assert.equal(res.usage.total_tokens, res.usage.input_tokens + res.usage.output_tokens);
});

test('responses.create with stream: true', async () => {
  const stream = await client.responses.create({
    model: 'test/chat',
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'stream from responses' }] }],
    stream: true,
  });
  let text = '';
  let completed = null;
  const types = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.completed') completed = event.response;
  }
  assert.equal(types[0], 'response.created');
  assert.match(text, /You said: stream from responses/);
  assert.ok(completed, `no response.completed among ${types.join(', ')}`);
  assert.equal(completed.output[0].content[0].text, text);
  assert.ok(completed.usage.output_tokens > 0);
});

test('responses.stream (the SDK helper) and finalResponse', async () => {
  const stream = client.responses.stream({ model: 'test/chat', input: 'helper stream' });
  let deltas = '';
  stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
  const final = await stream.finalResponse();
  // The helper's final response has no output_text (with OpenAI too: the
  // SDK adds it only to create's answers and parsed responses).
  const text = final.output[0].content[0].text;
  assert.match(text, /You said: helper stream/);
  assert.equal(text, deltas);
});

test('function tool round trip', async () => {
  const first = await client.responses.create({ model: 'test/chat', input: 'call:get_weather please', tools });
  const call = first.output.find((o) => o.type === 'function_call');
  assert.ok(call, `no function_call in ${JSON.stringify(first.output)}`);
  assert.equal(call.name, 'get_weather');
  assert.ok(call.call_id);
  JSON.parse(call.arguments);

  const second = await client.responses.create({
    model: 'test/chat',
    tools,
    input: [
      { role: 'user', content: 'call:get_weather please' },
      call,
      { type: 'function_call_output', call_id: call.call_id, output: 'rainy, 12C' },
    ],
  });
  assert.match(second.output_text, /rainy, 12C/);
});

test('streamed function call', async () => {
  const stream = client.responses.stream({ model: 'test/chat', input: 'call:get_weather now', tools });
  let args = '';
  stream.on('response.function_call_arguments.delta', (e) => { args += e.delta; });
  const final = await stream.finalResponse();
  const call = final.output.find((o) => o.type === 'function_call');
  assert.ok(call);
  assert.equal(call.arguments, args);
});

test('errors raise the SDK classes', async () => {
  // The SDK reads OpenAI's error object: type, param and code (a string
  // or null), beside the message.
  await assert.rejects(
    client.responses.create({ model: 'test/chat', input: 'hi', conversation: 'conv_x' }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /conversation/.test(e.message) &&
      e.type === 'invalid_request_error' && e.param === 'conversation' && e.code === 'invalid_prompt',
  );
  await assert.rejects(
    client.responses.create({ model: 'test/chat', input: [{ role: 'robot', content: 'hi' }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.type === 'invalid_request_error' && e.param === 'input[0].role',
  );
  await assert.rejects(
    client.responses.create({ model: 'test/chat', input: 'hi', previous_response_id: 'resp_x' }),
    (e) => e instanceof OpenAI.NotFoundError && /previous_response_id/.test(e.message) &&
      e.type === 'not_found_error' && e.param === null && e.code === null,
  );
  await assert.rejects(
    client.responses.create({ model: 'nobody/no-model', input: 'hi' }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && e.type === 'not_found_error',
  );
  const bad = new OpenAI({ baseURL: process.env.SWITCHYARD_URL, apiKey: 'sk-sy-v1-nope000000000000000000000000', maxRetries: 0 });
  await assert.rejects(
    bad.responses.create({ model: 'test/chat', input: 'hi' }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401,
  );
  await assert.rejects(client.responses.retrieve('resp_missing'),
    (e) => e instanceof OpenAI.NotFoundError && e.type === 'not_found_error' && e.code === null);
});

test('stored responses: retrieve, previous_response_id, input items, delete', async () => {
  const first = await client.responses.create({ model: 'test/chat', input: 'remember the lighthouse' });
  const got = await client.responses.retrieve(first.id);
  assert.equal(got.id, first.id);
  assert.equal(got.output[0].content[0].text, first.output[0].content[0].text);

  const second = await client.responses.create({ model: 'test/chat', previous_response_id: first.id, input: 'and now?' });
  assert.equal(second.previous_response_id, first.id);
  assert.match(second.output_text, /You said: and now\?/);

  const items = [];
  for await (const item of client.responses.inputItems.list(first.id)) items.push(item);
  assert.equal(items.length, 1);
  assert.equal(items[0].content[0].text, 'remember the lighthouse');
  assert.ok(items[0].id);

  await client.responses.delete(first.id);
  await assert.rejects(client.responses.retrieve(first.id), (e) => e instanceof OpenAI.NotFoundError);
});

// The official npm Anthropic client (@anthropic-ai/sdk), unchanged,
// against the gateway's Messages front door (POST /api/v1/messages).
// SWITCHYARD_URL (…/api/v1) and SWITCHYARD_KEY are set by
// examples/clients/clients_test.go, which starts the gateway first. The
// client's base URL is the gateway's /api: it appends /v1/messages, as it
// does with ANTHROPIC_BASE_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';

const baseURL = process.env.SWITCHYARD_URL.replace(/\/v1\/?$/, '');
const client = new Anthropic({ baseURL, apiKey: process.env.SWITCHYARD_KEY, maxRetries: 0 });

const tools = [{
  name: 'lookup',
  description: 'Look a thing up',
  input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
}];
const ask = { role: 'user', content: 'please call:lookup args:{"q":"switchyard"}' };

test('messages.create', async () => {
  const msg = await client.messages.create({
    model: 'test/chat',
    max_tokens: 256,
    system: 'be brief',
    messages: [{ role: 'user', content: 'hello from anthropic sdk' }],
  });
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.content[0].type, 'text');
  assert.match(msg.content[0].text, /You said: hello from anthropic sdk/);
  assert.equal(msg.stop_reason, 'end_turn');
  assert.ok(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0);
});

test('messages.create with the key as a bearer token (ANTHROPIC_AUTH_TOKEN)', async () => {
  const bearer = new Anthropic({ baseURL, apiKey: null, authToken: process.env.SWITCHYARD_KEY, maxRetries: 0 });
  const msg = await bearer.messages.create({
    model: 'test/chat',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'bearer hello' }],
  });
  assert.match(msg.content[0].text, /You said: bearer hello/);
});

test('messages.stream with finalMessage', async () => {
  let text = '';
  const stream = client.messages.stream({
    model: 'test/chat',
    max_tokens: 256,
    messages: [{ role: 'user', content: 'stream from anthropic sdk' }],
  });
  stream.on('text', (t) => { text += t; });
  const msg = await stream.finalMessage();
  assert.match(text, /You said: stream from anthropic sdk/);
  assert.equal(msg.content.length, 1);
  assert.equal(msg.content[0].text, text);
  assert.equal(msg.stop_reason, 'end_turn');
  assert.ok(msg.usage.output_tokens > 0);
});

test('countTokens', async () => {
  const res = await client.messages.countTokens({
    model: 'test/chat',
    system: 'be brief',
    messages: [{ role: 'user', content: 'how many tokens is this' }],
    tools,
  });
  assert.ok(Number.isInteger(res.input_tokens) && res.input_tokens > 0, JSON.stringify(res));
});

test('tool round trip: tool_use, then tool_result, then the answer', async () => {
  const first = await client.messages.create({ model: 'test/chat', max_tokens: 256, tools, messages: [ask] });
  assert.equal(first.stop_reason, 'tool_use');
  const use = first.content.find((b) => b.type === 'tool_use');
  assert.ok(use, JSON.stringify(first.content));
  assert.equal(use.name, 'lookup');
  assert.deepEqual(use.input, { q: 'switchyard' });

  const answer = await client.messages.create({
    model: 'test/chat',
    max_tokens: 256,
    tools,
    messages: [
      ask,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'a gateway for models' }] },
    ],
  });
  assert.equal(answer.stop_reason, 'end_turn');
  assert.match(answer.content[0].text, /a gateway for models/);
});

test('a streamed tool call', async () => {
  const msg = await client.messages.stream({ model: 'test/chat', max_tokens: 256, tools, messages: [ask] }).finalMessage();
  assert.equal(msg.stop_reason, 'tool_use');
  const use = msg.content.find((b) => b.type === 'tool_use');
  assert.ok(use, JSON.stringify(msg.content));
  assert.deepEqual(use.input, { q: 'switchyard' });
});

test('a bad key is an AuthenticationError', async () => {
  const bad = new Anthropic({ baseURL, apiKey: 'sk-sy-not-a-key', maxRetries: 0 });
  await assert.rejects(
    bad.messages.create({ model: 'test/chat', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    (err) => {
      assert.ok(err instanceof Anthropic.AuthenticationError, String(err));
      assert.equal(err.status, 401);
      assert.equal(err.error?.error?.type, 'authentication_error');
      return true;
    },
  );
});

test('an invalid request is a BadRequestError', async () => {
  await assert.rejects(
    client.messages.create({ model: 'test/chat', max_tokens: 16, messages: [{ role: 'user', content: [{ type: 'video' }] }] }),
    (err) => {
      assert.ok(err instanceof Anthropic.BadRequestError, String(err));
      assert.equal(err.error?.error?.type, 'invalid_request_error');
      return true;
    },
  );
});

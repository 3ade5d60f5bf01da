// The official npm `openai` client reading a Responses stream that fails
// after it started: the upstream cuts its stream (the Go test starting
// this file sets the demo upstream's CutAfter fault), and the gateway
// ends the stream as OpenAI's API does — an `error` event
// {type, code, message, param, sequence_number}, then `response.failed`
// whose response.error is {code, message} (the Responses API reference,
// "Streaming events"). Kept out of test/ because it needs that fault.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});

test('a stream cut short ends with error and response.failed', async () => {
  const stream = await client.responses.create({ model: 'test/chat', input: 'a b c d e f g h', stream: true });
  const types = [];
  let error = null;
  let failed = null;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'error') error = event;
    if (event.type === 'response.failed') failed = event.response;
  }
  assert.equal(types[0], 'response.created');
  assert.deepEqual(types.slice(-2), ['error', 'response.failed']);
  assert.equal(error.code, 'server_error');
  assert.equal(error.param, null);
  assert.equal(typeof error.sequence_number, 'number');
  assert.match(error.message, /ended the stream before it was complete/);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.error.code, 'server_error');
  assert.equal(failed.error.message, error.message);
});

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

// Tools bound the LangChain way, and structured output through
// withStructuredOutput: for a model without a structured-output profile
// (test/chat is not in LangChain's table) it asks for a forced function
// call with the schema as the function's parameters (the demo model calls
// it with the arguments the prompt gives after args:).
test('tools and structured output', async () => {
  const weather = { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
  const msg = await model('test/chat').bindTools([weather], { tool_choice: 'required' }).invoke('weather in Paris?');
  assert.equal(msg.tool_calls?.[0]?.name, 'get_weather', JSON.stringify(msg.tool_calls));
  const city = await model('test/chat')
    .withStructuredOutput({ title: 'city', type: 'object', properties: { name: { type: 'string' }, population: { type: 'integer' } }, required: ['name', 'population'], additionalProperties: false })
    .invoke('a city args:{"name":"Paris","population":1}');
  assert.equal(typeof city.name, 'string', JSON.stringify(city));
  assert.equal(city.population, 1, JSON.stringify(city));
});

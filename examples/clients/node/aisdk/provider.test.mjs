// OpenRouter's Vercel AI SDK provider (@openrouter/ai-sdk-provider) with
// `ai`, unchanged but for base URL and key, against a running gateway
// (examples/clients/openrouter_test.go starts it). The provider validates
// every answer with its zod schemas; a missing field fails the call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, streamText, embed, embedMany, tool, jsonSchema, stepCountIs, Output } from 'ai';
import { createOpenRouter } from '@openrouter/ai-sdk-provider';

const openrouter = createOpenRouter({ baseURL: process.env.SWITCHYARD_URL, apiKey: process.env.SWITCHYARD_KEY });

test('generateText', async () => {
  const res = await generateText({ model: openrouter('test/chat'), prompt: 'hello from the ai sdk', maxRetries: 0 });
  assert.match(res.text, /You said: hello from the ai sdk/);
  assert.equal(res.finishReason, 'stop');
  assert.ok(res.usage.outputTokens > 0);
  const u = res.providerMetadata?.openrouter?.usage;
  assert.ok(u, `provider metadata: ${JSON.stringify(res.providerMetadata)}`);
  assert.equal(typeof u.cost, 'number');
  // The provider reports cost_details.upstream_inference_cost (issue 32).
  assert.equal(typeof u.costDetails?.upstreamInferenceCost, 'number', JSON.stringify(u));
  assert.equal(u.promptTokensDetails?.cachedTokens, 0);
});

test('streamText', async () => {
  const res = streamText({ model: openrouter('test/chat'), prompt: 'stream from the ai sdk', maxRetries: 0 });
  let text = '';
  for await (const t of res.textStream) text += t;
  assert.match(text, /You said: stream from the ai sdk/);
  assert.equal(await res.finishReason, 'stop');
  assert.ok((await res.usage).outputTokens > 0);
  const u = (await res.providerMetadata)?.openrouter?.usage;
  assert.equal(typeof u?.costDetails?.upstreamInferenceCost, 'number', JSON.stringify(u));
});

// The provider's completion() model calls the legacy POST /completions
// (prompt in, text_completion out) and validates the answer and every
// chunk with its own zod schema. It is driven through its model interface
// (doGenerate, doStream): ai 7's generateText always passes a toolChoice,
// which this model refuses client-side before any request is sent.
test('completion model (POST /completions)', async () => {
  const model = openrouter.completion('test/chat');
  const prompt = (text) => [{ role: 'user', content: [{ type: 'text', text }] }];
  const res = await model.doGenerate({ prompt: prompt('complete from the ai sdk') });
  assert.match(res.content[0].text, /You said: complete from the ai sdk/);
  assert.equal(res.finishReason.unified, 'stop');
  assert.ok(res.usage.outputTokens.total > 0, JSON.stringify(res.usage));
  assert.equal(typeof res.providerMetadata.openrouter.usage.cost, 'number');
  const { stream } = await model.doStream({ prompt: prompt('stream a completion') });
  let text = '';
  let finish;
  for await (const part of stream) {
    if (part.type === 'text-delta') text += part.delta;
    if (part.type === 'error') assert.fail(JSON.stringify(part.error));
    if (part.type === 'finish') finish = part.finishReason;
  }
  assert.match(text, /You said: stream a completion/);
  assert.equal(finish?.unified, 'stop');
});

test('embeddings', async () => {
  const one = await embed({ model: openrouter.textEmbeddingModel('test/embed'), value: 'one', maxRetries: 0 });
  assert.equal(one.embedding.length, 16);
  const many = await embedMany({ model: openrouter.textEmbeddingModel('test/embed'), values: ['one', 'two'], maxRetries: 0 });
  assert.equal(many.embeddings.length, 2);
});

test('errors', async () => {
  await assert.rejects(generateText({ model: openrouter('nobody/nothing'), prompt: 'x', maxRetries: 0 }),
    (err) => err.statusCode === 404 || err.lastError?.statusCode === 404 || /nobody\/nothing/.test(String(err)));
});

// Tools and structured outputs through the AI SDK's own helpers: a tool the
// model calls (the demo calls it when the prompt names it) whose result it
// answers from, and an object generated against a JSON Schema.
test('tools and structured output', async () => {
  const res = await generateText({
    model: openrouter('test/chat'),
    prompt: 'call:get_weather for Paris',
    tools: { get_weather: tool({ description: 'Weather in a city', inputSchema: jsonSchema({ type: 'object', properties: { city: { type: 'string' } } }), execute: async () => ({ temp_c: 21 }) }) },
    stopWhen: stepCountIs(3),
    maxRetries: 0,
  });
  assert.ok(res.steps.length >= 2, `steps: ${res.steps.length}`);
  assert.equal(res.steps[0].toolCalls[0]?.toolName, 'get_weather');
  assert.match(res.text, /temp_c/);

  const obj = await generateText({
    model: openrouter('test/chat'),
    prompt: 'a city',
    output: Output.object({ schema: jsonSchema({ type: 'object', properties: { name: { type: 'string' }, population: { type: 'integer' } }, required: ['name', 'population'], additionalProperties: false }) }),
    maxRetries: 0,
  });
  assert.equal(typeof obj.output.name, 'string');
  assert.equal(obj.output.population, 1);
});

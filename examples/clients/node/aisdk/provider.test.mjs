// OpenRouter's Vercel AI SDK provider (@openrouter/ai-sdk-provider) with
// `ai`, unchanged but for base URL and key, against a running gateway
// (examples/clients/openrouter_test.go starts it). The provider validates
// every answer with its zod schemas; a missing field fails the call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, streamText, embed, embedMany } from 'ai';
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

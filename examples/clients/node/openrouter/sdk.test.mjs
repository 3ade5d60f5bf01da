// OpenRouter's own TypeScript SDK (@openrouter/sdk, zod-validated),
// unchanged but for its server URL and key, against a running gateway.
// SWITCHYARD_URL (…/api/v1) and SWITCHYARD_KEY are set by
// examples/clients/openrouter_test.go, which starts the gateway first.
// The SDK validates every answer against its schemas: a missing or
// mistyped field fails the call with ResponseValidationError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenRouter } from '@openrouter/sdk';
import * as errors from '@openrouter/sdk/models/errors';

const client = new OpenRouter({
  serverURL: process.env.SWITCHYARD_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  retryConfig: { strategy: 'none' },
});

// checked runs f and, when the SDK's validation refuses an answer, fails
// with the fields it refused (pretty()), not just "validation failed".
async function checked(f) {
  try {
    return await f();
  } catch (err) {
    if (typeof err?.pretty === 'function') throw new Error(err.pretty());
    throw err;
  }
}

test('chat completion', () => checked(async () => {
  const res = await client.chat.send({
    chatRequest: { model: 'test/chat', messages: [{ role: 'user', content: 'hello from openrouter sdk' }] },
  });
  assert.equal(res.object, 'chat.completion');
  assert.equal(res.model, 'test/chat');
  assert.match(res.choices[0].message.content, /You said: hello from openrouter sdk/);
  assert.equal(res.choices[0].finishReason, 'stop');
  assert.ok(res.usage.totalTokens > 0);
  assert.equal(typeof res.usage.cost, 'number');
  const cd = res.usage.costDetails;
  assert.equal(typeof cd.upstreamInferencePromptCost, 'number');
  assert.equal(typeof cd.upstreamInferenceCompletionsCost, 'number');
  assert.equal(typeof cd.upstreamInferenceCost, 'number');
  globalThis.lastID = res.id;
}));

test('streaming chat completion', () => checked(async () => {
  const stream = await client.chat.send({
    chatRequest: { model: 'test/chat', stream: true, messages: [{ role: 'user', content: 'stream from openrouter sdk' }] },
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      finish = c.finishReason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.match(text, /You said: stream from openrouter sdk/);
  assert.equal(finish, 'stop');
  assert.ok(usage && usage.completionTokens > 0, 'usage arrives on the final chunk');
  assert.equal(typeof usage.costDetails.upstreamInferenceCompletionsCost, 'number');
}));

test('embeddings', () => checked(async () => {
  const res = await client.embeddings.generate({ requestBody: { model: 'test/embed', input: ['one', 'two'] } });
  assert.match(res.id, /^gen-/);
  assert.equal(res.model, 'test/embed');
  assert.equal(res.data.length, 2);
  assert.equal(res.data[1].index, 1);
  assert.equal(res.data[0].embedding.length, 16);
  assert.ok(res.usage.promptTokens > 0);
  assert.equal(typeof res.usage.costDetails.upstreamInferencePromptCost, 'number');
}));

// Every page of the model list (the SDK pages with offset and limit).
async function all(pages) {
  const out = [];
  for await (const page of pages) out.push(...page.result.data);
  return out;
}

test('model list', () => checked(async () => {
  const models = await all(await client.models.list());
  const chat = models.find((m) => m.id === 'test/chat');
  assert.ok(chat, 'test/chat listed');
  assert.equal(chat.canonicalSlug, 'test/chat');
  assert.deepEqual(chat.architecture.outputModalities, ['text']);
  assert.ok(chat.supportedParameters.includes('temperature'));
  assert.equal(chat.links.details, '/api/v1/models/test/chat/endpoints');
  assert.equal(typeof chat.topProvider.isModerated, 'boolean');
  assert.ok(models.some((m) => m.id === 'switchyard/auto'), 'router models listed');
  // Paged by the SDK: two at a time, the same models.
  const paged = await all(await client.models.list({ limit: 2 }));
  assert.deepEqual(paged.map((m) => m.id), models.map((m) => m.id));
  // Filters: a parameter no endpoint takes lists none.
  const none = await client.models.list({ supportedParameters: 'no_such_parameter' });
  for await (const page of none) assert.equal(page.result.totalCount, 0);
  const count = await client.models.count();
  assert.equal(count.data.count, models.length);
}));

test('one model, its endpoints, the user list, providers', () => checked(async () => {
  const one = await client.models.get({ author: 'test', slug: 'chat' });
  assert.equal(one.data.id, 'test/chat');
  const eps = await client.endpoints.list({ author: 'test', slug: 'chat' });
  assert.equal(eps.data.id, 'test/chat');
  assert.ok(eps.data.endpoints.length > 0);
  assert.equal(typeof eps.data.endpoints[0].pricing.prompt, 'string');
  const user = await all(await client.models.listForUser({ bearer: process.env.SWITCHYARD_KEY }));
  assert.ok(user.some((m) => m.id === 'test/chat'));
  const zdr = await client.endpoints.listZdrEndpoints();
  assert.ok(Array.isArray(zdr.data));
  const providers = await client.providers.list();
  assert.ok(providers.data.length > 0 && providers.data.every((p) => typeof p.slug === 'string'));
  await assert.rejects(client.models.get({ author: 'nobody', slug: 'nothing' }), (err) => err instanceof errors.NotFoundResponseError);
}));

test('embedding models', () => checked(async () => {
  const models = await all(await client.embeddings.listModels());
  const embed = models.find((m) => m.id === 'test/embed');
  assert.ok(embed, 'test/embed listed');
  assert.deepEqual(embed.architecture.outputModalities, ['embeddings']);
  assert.ok(models.every((m) => m.architecture.outputModalities.includes('embeddings')));
}));

test('key', () => checked(async () => {
  const res = await client.apiKeys.getCurrentKeyMetadata();
  assert.equal(typeof res.data.usage, 'number');
  assert.equal(typeof res.data.isManagementKey, 'boolean');
}));

test('credits', () => checked(async () => {
  const res = await client.credits.getCredits();
  assert.ok(res.data.totalCredits > 0);
  assert.equal(typeof res.data.totalUsage, 'number');
}));

test('generation record', () => checked(async () => {
  const res = await client.chat.send({
    chatRequest: { model: 'test/chat', messages: [{ role: 'user', content: 'a generation to look up' }] },
  });
  // The record is written when the answer has ended; read until it is there.
  let gen;
  for (let i = 0; ; i++) {
    try {
      gen = await client.generations.getGeneration({ id: res.id });
      break;
    } catch (err) {
      if (!(err instanceof errors.NotFoundResponseError) || i > 50) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  assert.equal(gen.data.id, res.id);
  assert.equal(gen.data.model, 'test/chat');
  assert.equal(gen.data.tokensCompletion, res.usage.completionTokens);
  assert.equal(gen.data.usage, res.usage.cost);
  assert.equal(gen.data.totalCost, res.usage.cost);
  assert.equal(gen.data.finishReason, 'stop');
}));

// GET /generation/content: off by default (the SDK's typed 404), then
// turned on for the account with Switchyard's own route (OpenRouter's is a
// dashboard setting), read through the SDK with its validation on.
test('generation content', () => checked(async () => {
  const send = (content, stream = false) => client.chat.send({ chatRequest: { model: 'test/chat', stream, messages: [{ role: 'user', content }] } });
  const before = await send('not stored');
  await assert.rejects(client.generations.listGenerationContent({ id: before.id }),
    (err) => err instanceof errors.NotFoundResponseError && /store_content/.test(err.message));
  const storeContent = (v) => fetch(`${process.env.SWITCHYARD_URL}/accounts/me/store_content`, {
    method: 'PUT', headers: { authorization: `Bearer ${process.env.SWITCHYARD_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ store_content: v }),
  }).then((r) => assert.equal(r.status, 200));
  await storeContent(true);
  try {
    const res = await send('store this turn');
    const got = await client.generations.listGenerationContent({ id: res.id });
    assert.deepEqual(got.data.input.messages, [{ role: 'user', content: 'store this turn' }]);
    assert.equal(got.data.output.completion, res.choices[0].message.content);
    assert.equal(got.data.output.reasoning, null);
    assert.equal(got.data.error, null);

    let id = '';
    let text = '';
    for await (const chunk of await send('store this stream', true)) {
      id = chunk.id;
      for (const c of chunk.choices) text += c.delta?.content ?? '';
    }
    const streamed = await client.generations.listGenerationContent({ id });
    assert.equal(streamed.data.output.completion, text);
  } finally {
    await storeContent(null); // the operator's default (off) again, for the tests after
  }
}));

test('typed errors', () => checked(async () => {
  const send = (c, chatRequest) => c.chat.send({ chatRequest });
  const hi = [{ role: 'user', content: 'x' }];
  await assert.rejects(send(client, { model: 'nobody/nothing', messages: hi }),
    (err) => err instanceof errors.NotFoundResponseError && err.statusCode === 404 && /nobody\/nothing/.test(err.message));
  await assert.rejects(send(client, { model: 'test/chat', messages: hi, temperature: 7 }),
    (err) => err instanceof errors.BadRequestResponseError && err.statusCode === 400 && err.error.code === 400);
  const wrong = new OpenRouter({ serverURL: process.env.SWITCHYARD_URL, apiKey: 'sk-wrong-key-000000000000', retryConfig: { strategy: 'none' } });
  await assert.rejects(send(wrong, { model: 'test/chat', messages: hi }),
    (err) => err instanceof errors.UnauthorizedResponseError && err.statusCode === 401);
  const broke = new OpenRouter({ serverURL: process.env.SWITCHYARD_URL, apiKey: process.env.SWITCHYARD_BROKE_KEY, retryConfig: { strategy: 'none' } });
  await assert.rejects(send(broke, { model: 'test/chat', messages: hi }),
    (err) => err instanceof errors.PaymentRequiredResponseError && err.statusCode === 402 && /credits/i.test(err.message));
  await assert.rejects(broke.embeddings.generate({ requestBody: { model: 'test/embed', input: 'x' } }),
    (err) => err instanceof errors.PaymentRequiredResponseError && err.statusCode === 402);
  await assert.rejects(client.embeddings.generate({ requestBody: { model: 'nobody/nothing', input: 'x' } }),
    (err) => err instanceof errors.NotFoundResponseError && err.statusCode === 404);
  const limited = new OpenRouter({ serverURL: process.env.SWITCHYARD_URL, apiKey: process.env.SWITCHYARD_LIMITED_KEY, retryConfig: { strategy: 'none' } });
  await send(limited, { model: 'test/chat', messages: hi });
  await assert.rejects(send(limited, { model: 'test/chat', messages: hi }),
    (err) => err instanceof errors.TooManyRequestsResponseError && err.statusCode === 429 && err.error.code === 429);
}));

// OpenRouter's names, as its SDK types send them: the metadata header
// (answered as openrouterMetadata), the openrouter:datetime server tool,
// a router id, the plugin options of its types (accepted, reported).
test('OpenRouter names', () => checked(async () => {
  const hi = [{ role: 'user', content: 'what time is it' }];
  const meta = await client.chat.send({ xOpenRouterMetadata: 'enabled', chatRequest: { model: 'test/chat', messages: hi } });
  assert.equal(meta.openrouterMetadata.requested, 'test/chat');
  // test/chat is load-balanced over two providers: the one that served is
  // marked, whichever it was, and the summary names it.
  const served = meta.openrouterMetadata.endpoints.available.filter((e) => e.selected);
  assert.equal(served.length, 1, 'exactly one endpoint is marked selected');
  assert.match(meta.openrouterMetadata.summary, new RegExp(` via ${served[0].provider} `));
  const stream = await client.chat.send({ xOpenRouterMetadata: 'enabled', chatRequest: { model: 'test/chat', stream: true, messages: hi } });
  let streamed = null;
  for await (const chunk of stream) streamed = chunk.openrouterMetadata ?? streamed;
  assert.equal(streamed?.requested, 'test/chat', 'the final chunk carries openrouter_metadata');

  const tool = await client.chat.send({
    chatRequest: { model: 'test/chat', messages: hi, tools: [{ type: 'openrouter:datetime', parameters: { timezone: 'Asia/Tokyo' } }] },
  });
  assert.match(tool.choices[0].message.content, /"timezone":"Asia\/Tokyo"/);
  assert.equal(tool.usage.serverToolUseDetails.toolCallsExecuted, 1);

  const opts = await client.chat.send({
    xOpenRouterMetadata: 'enabled',
    chatRequest: {
      model: 'test/chat', messages: hi,
      plugins: [{ id: 'web', enabled: false, mode: 'fast', xSearch: { allowedXHandles: ['a'] } }],
    },
  });
  assert.equal(opts.object, 'chat.completion');
  // (The SDK keeps only the metadata members it knows: the options are
  // reported in unsupported, which host/server's e2e tests read.)
}));

// Model variants as the SDK sends them (a suffix of the model string):
// the base model answers, routed or extended as the variant says
// (docs/routing.md, "Model variants").
test('model variants', () => checked(async () => {
  const hi = [{ role: 'user', content: 'variants' }];
  const floor = await client.chat.send({ xOpenRouterMetadata: 'enabled', chatRequest: { model: 'test/chat:floor', messages: hi } });
  assert.equal(floor.model, 'test/chat');
  assert.equal(floor.openrouterMetadata.requested, 'test/chat:floor');
  assert.equal(floor.openrouterMetadata.strategy, 'sort:price');
  const nitro = await client.chat.send({ xOpenRouterMetadata: 'enabled', chatRequest: { model: 'test/chat:nitro', stream: true, messages: hi } });
  let streamed = null;
  for await (const chunk of nitro) streamed = chunk.openrouterMetadata ?? streamed;
  assert.equal(streamed?.strategy, 'sort:throughput');
  const online = await client.chat.send({ xOpenRouterMetadata: 'enabled', chatRequest: { model: 'test/chat:online', messages: [{ role: 'user', content: 'latest news' }] } });
  assert.equal(online.model, 'test/chat');
  const web = online.openrouterMetadata.pipeline.find((st) => st.name === 'web');
  assert.ok(web && web.data.results > 0, `the web plugin ran: ${JSON.stringify(online.openrouterMetadata.pipeline)}`);
  await assert.rejects(client.chat.send({ chatRequest: { model: 'test/chat:free', messages: hi } }),
    (err) => err instanceof errors.NotFoundResponseError && /:free variant/.test(err.message));
}));

test('keys: create, list, get, update, delete', () => checked(async () => {
  const made = await client.apiKeys.create({ requestBody: { name: 'sdk-made', limit: 1.5 } });
  assert.match(made.key, /^sk-/);
  assert.equal(made.data.name, 'sdk-made');
  assert.equal(made.data.limit, 1.5);
  const hash = made.data.hash;
  const list = await client.apiKeys.list();
  assert.ok(list.data.some((k) => k.hash === hash));
  const one = await client.apiKeys.get({ hash });
  assert.equal(one.data.label, made.data.label);
  const upd = await client.apiKeys.update({ hash, requestBody: { name: 'sdk-renamed', disabled: true } });
  assert.equal(upd.data.name, 'sdk-renamed');
  assert.equal(upd.data.disabled, true);
  // An ordinary key may not manage keys: a 403 (the SDK declares no type
  // of its own for this operation's 403).
  const plain = await client.apiKeys.create({ requestBody: { name: 'sdk-plain' } });
  const user = new OpenRouter({ serverURL: process.env.SWITCHYARD_URL, apiKey: plain.key, retryConfig: { strategy: 'none' } });
  await assert.rejects(user.apiKeys.list(), (err) => err instanceof errors.OpenRouterError && err.statusCode === 403 && /management keys/.test(err.message));
  await client.apiKeys.delete({ hash: plain.data.hash });
  const del = await client.apiKeys.delete({ hash });
  assert.equal(del.deleted, true);
  await assert.rejects(client.apiKeys.get({ hash }), (err) => err instanceof errors.NotFoundResponseError);
}));

test('activity', () => checked(async () => {
  const res = await client.analytics.getUserActivity();
  assert.ok(res.data.length > 0, 'the requests above are counted');
  const row = res.data.find((r) => r.model === 'test/chat');
  assert.ok(row && row.requests > 0 && row.usage > 0 && row.modelPermaslug === 'test/chat', JSON.stringify(res.data));
}));

// Function tools, as the SDK sends them: the demo model calls the tool a
// required tool_choice names, and answers in prose from its result.
test('function tools', () => checked(async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const messages = [{ role: 'user', content: 'weather in Paris?' }];
  const call = await client.chat.send({ chatRequest: { model: 'test/chat', messages, tools, toolChoice: 'required' } });
  assert.equal(call.choices[0].finishReason, 'tool_calls');
  const tc = call.choices[0].message.toolCalls[0];
  assert.equal(tc.function.name, 'get_weather');
  const answer = await client.chat.send({
    chatRequest: { model: 'test/chat', tools, messages: [...messages, { role: 'assistant', content: null, toolCalls: [tc] }, { role: 'tool', toolCallId: tc.id, content: '{"temp_c":21}' }] },
  });
  assert.equal(answer.choices[0].finishReason, 'stop');
  assert.match(answer.choices[0].message.content, /temp_c/);
}));

// Fallback models: test/down's only provider refuses connections, so the
// answer comes from the next model of `models`; with allow_fallbacks false
// and no fallback model the failure is the client's typed error.
test('fallback models', () => checked(async () => {
  const hi = [{ role: 'user', content: 'fall back' }];
  const res = await client.chat.send({ xOpenRouterMetadata: 'enabled', chatRequest: { model: 'test/down', models: ['test/chat'], messages: hi } });
  assert.equal(res.model, 'test/chat');
  assert.match(res.choices[0].message.content, /You said: fall back/);
  await assert.rejects(client.chat.send({ chatRequest: { model: 'test/down', messages: hi, provider: { allowFallbacks: false } } }),
    (err) => err instanceof errors.OpenRouterError && err.statusCode >= 500);
}));

// Every provider preference of the SDK's ProviderPreferences type, each
// sent as its typed form: accepted (never a 400 for a typed field), routed
// as it says where the demo can show it (the provider that answered, from
// the routing metadata).
test('provider preferences', () => checked(async () => {
  const hi = [{ role: 'user', content: 'route me' }];
  const send = (provider) => client.chat.send({ xOpenRouterMetadata: 'enabled', chatRequest: { model: 'test/chat', messages: hi, provider } });
  const cases = [
    [{ order: ['beta'], allowFallbacks: false }, 'beta'],
    [{ only: ['alpha'] }, 'alpha'],
    [{ ignore: ['alpha'] }, 'beta'],
    [{ sort: 'price' }, 'alpha'], // alpha is the cheaper endpoint
    [{ sort: { by: 'price', partition: 'none' } }, 'alpha'],
    [{ sort: 'throughput' }],
    [{ sort: 'latency' }],
    [{ requireParameters: true }],
    [{ dataCollection: 'deny' }],
    [{ zdr: false }],
    [{ enforceDistillableText: false }],
    [{ quantizations: ['fp8', 'bf16', 'unknown'] }],
    [{ maxPrice: { prompt: '1000', completion: '1000' } }],
    [{ preferredMinThroughput: 10 }],
    [{ preferredMinThroughput: { p50: 10, p90: 5 } }],
    [{ preferredMaxLatency: 5 }],
    [{ preferredMaxLatency: { p50: 5, p99: 20 } }],
  ];
  for (const [provider, want] of cases) {
    const res = await send(provider);
    assert.equal(res.object, 'chat.completion', JSON.stringify(provider));
    const by = res.openrouterMetadata.endpoints.available.find((e) => e.selected)?.provider;
    if (want) assert.equal(by, want, `${JSON.stringify(provider)} answered by ${by}`);
  }
  // A price ceiling no endpoint meets: the typed 404 says why.
  await assert.rejects(send({ maxPrice: { prompt: '0.0001' } }),
    (err) => err instanceof errors.OpenRouterError && err.statusCode === 404 && /max_price/.test(err.message));
}));

// Structured outputs: a json_schema response format is honoured (the demo
// answers an instance of the schema), through the SDK's typed form.
test('structured outputs', () => checked(async () => {
  const res = await client.chat.send({
    chatRequest: {
      model: 'test/chat', messages: [{ role: 'user', content: 'a city' }],
      responseFormat: { type: 'json_schema', jsonSchema: { name: 'city', strict: true, schema: { type: 'object', properties: { name: { type: 'string' }, population: { type: 'integer' } }, required: ['name', 'population'], additionalProperties: false } } },
    },
  });
  const city = JSON.parse(res.choices[0].message.content);
  assert.equal(typeof city.name, 'string');
  assert.equal(city.population, 1);
}));

// Reasoning: the demo's reasoning model thinks when asked; the SDK reads the
// reasoning text, JSON and streamed, and its tokens in the usage details.
test('reasoning', () => checked(async () => {
  const messages = [{ role: 'user', content: 'think about it' }];
  const res = await client.chat.send({ chatRequest: { model: 'test/reasoner', messages, reasoning: { effort: 'high' } } });
  assert.match(res.choices[0].message.reasoning, /The user said: think about it/);
  assert.match(res.choices[0].message.content, /You said: think about it/);
  assert.ok(res.usage.completionTokensDetails.reasoningTokens > 0, JSON.stringify(res.usage));
  let reasoning = '';
  for await (const chunk of await client.chat.send({ chatRequest: { model: 'test/reasoner', messages, reasoning: { effort: 'low' }, stream: true } })) {
    for (const c of chunk.choices) reasoning += c.delta?.reasoning ?? '';
  }
  assert.match(reasoning, /The user said: think about it/);
  const quiet = await client.chat.send({ chatRequest: { model: 'test/reasoner', messages } });
  assert.ok(!quiet.choices[0].message.reasoning, 'no reasoning when none was asked');
}));

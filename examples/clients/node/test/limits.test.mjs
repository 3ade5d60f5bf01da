// Oversized bodies through the official npm `openai` client: the gateway
// answers 413 while the client is still uploading, and the client must
// read that answer — every time — instead of a connection reset. The SDK
// (through Node's fetch) sends no `Expect: 100-continue`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});

for (const mib of [11, 64]) {
  test(`a ${mib} MiB request is answered 413 every time`, async () => {
    const content = 'x'.repeat(mib * 1024 * 1024);
    for (let i = 0; i < 4; i++) {
      await assert.rejects(
        client.chat.completions.create({ model: 'test/chat', messages: [{ role: 'user', content }] }),
        (err) => {
          assert.ok(err instanceof OpenAI.APIError, `round ${i}: ${err}`);
          assert.equal(err.status, 413, `round ${i}: ${err}`);
          assert.equal(err.error?.code ?? err.code, 413);
          assert.match(err.message, /exceeds the gateway's limit of 10 MiB/);
          return true;
        },
      );
    }
  });
}

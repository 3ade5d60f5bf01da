// The `web` plugin through the npm `openai` client, unchanged: `plugins` is
// an extra body field the client passes through, and the url_citation
// annotations come back on the message (JSON) or the finishing chunk's
// delta (stream). Offsets count code points ([...content].slice(s, e)).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});

const request = {
  model: 'test/chat',
  messages: [{ role: 'user', content: 'How are API keys and rate limits configured?' }],
  plugins: [{ id: 'web', max_results: 2 }],
};

function checkCitations(content, annotations) {
  assert.equal(annotations.length, 2);
  const n = [...content].length;
  for (const a of annotations) {
    assert.equal(a.type, 'url_citation');
    const c = a.url_citation;
    assert.match(c.url, /switchyard\.demo/);
    assert.match(c.title, /\(demo search engine\)$/);
    assert.ok(c.content.length > 0);
    assert.ok(c.start_index >= 0 && c.start_index <= c.end_index && c.end_index <= n, JSON.stringify(c));
  }
}

test('web plugin (JSON)', async () => {
  const res = await client.chat.completions.create(request);
  const msg = res.choices[0].message;
  checkCitations(msg.content, msg.annotations);
});

test('web plugin (stream)', async () => {
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let text = '';
  let annotations = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.delta?.annotations) {
        assert.ok(c.finish_reason, 'annotations come with the finishing chunk');
        annotations = c.delta.annotations;
      }
    }
  }
  assert.ok(annotations, 'the stream carried annotations');
  checkCitations(text, annotations);
});

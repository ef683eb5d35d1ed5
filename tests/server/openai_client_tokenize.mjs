// The official `openai` npm client against a running `tandem serve`: one
// model retrieved (models.retrieve) and an unknown one refused as the
// client's NotFoundError; POST /tokenize and /detokenize (vLLM's routes,
// outside /v1) through the client's generic post() with the server root as
// its base URL: a round trip back to the same text, the count a completion
// reports as prompt_tokens, the messages form counting a chat's prompt, and
// a bad id surfacing as BadRequestError naming the field. Run by
// run_openai_client.sh.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const v1 = process.argv[2];
const client = new OpenAI({ baseURL: v1, apiKey: 'not-needed', maxRetries: 0 });
const root = new OpenAI({ baseURL: v1.replace(/\/v1\/?$/, ''), apiKey: 'not-needed', maxRetries: 0 });

const listed = await client.models.list();
const model = await client.models.retrieve('tandem');
assert.equal(model.id, 'tandem');
assert.equal(model.object, 'model');
assert.deepEqual(model, listed.data[0]);
await assert.rejects(
  client.models.retrieve('no-such-model'),
  (error) => error instanceof OpenAI.NotFoundError && error.code === 'model_not_found',
);
// The client encodes the '/' of a Hugging Face style id; it is not this model either.
await assert.rejects(client.models.retrieve('org/tandem'), (error) => error instanceof OpenAI.NotFoundError);

const texts = ['The history of the city', 'Grüße aus Köln — 東京 🙂', ' spaces  and\nlines '];
for (const prompt of texts) {
  const ids = await root.post('/tokenize', { body: { model: 'tandem', prompt, return_token_strs: true } });
  assert.equal(ids.count, ids.tokens.length);
  assert.equal(ids.token_strs.length, ids.tokens.length);
  assert.equal(ids.max_model_len, model.max_model_len);
  const text = await root.post('/detokenize', { body: { model: 'tandem', tokens: ids.tokens } });
  assert.equal(text.prompt, prompt);
  const completion = await client.completions.create({ model: 'tandem', prompt, max_tokens: 1, temperature: 0 });
  assert.equal(completion.usage.prompt_tokens, ids.count);
}

const messages = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Tell me about the old city.' },
];
const chatIds = await root.post('/tokenize', { body: { model: 'tandem', messages } });
const chat = await client.chat.completions.create({ model: 'tandem', messages, max_tokens: 1, temperature: 0 });
assert.equal(chat.usage.prompt_tokens, chatIds.count);

await assert.rejects(
  root.post('/detokenize', { body: { tokens: [1, 1e9] } }),
  (error) => error instanceof OpenAI.BadRequestError && error.param === 'tokens',
);
await assert.rejects(
  root.post('/tokenize', { body: { prompt: 'hi', model: 'gpt-nothing' } }),
  (error) => error instanceof OpenAI.NotFoundError && error.code === 'model_not_found',
);

console.log(`openai client tokenize: all checks passed (${texts.length} round trips)`);

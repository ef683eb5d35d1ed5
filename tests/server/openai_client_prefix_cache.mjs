// The official `openai` npm client reading prefix caching as OpenAI reports
// it: usage.prompt_tokens_details.cached_tokens, 0 the first time a prompt
// is seen and more on its repeat (whole or streamed), with the same text;
// and cache_salt, which keeps requests apart. Run by run_openai_client.sh.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'not-needed', maxRetries: 0 });
// Long enough for several KV blocks, and unlike the other scripts' prompts.
const prompt = 'A ledger of the lighthouse keepers on the northern cape, their names, '
  + 'the storms each one recorded and the ships that passed in the winter of that year';
const request = { model: 'tandem', prompt, max_tokens: 8, temperature: 0 };

const first = await client.completions.create(request);
assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
const second = await client.completions.create(request);
assert.ok(second.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(second.usage));
assert.ok(second.usage.prompt_tokens_details.cached_tokens < second.usage.prompt_tokens);
assert.equal(second.choices[0].text, first.choices[0].text);

const stream = await client.completions.create({
  ...request, stream: true, stream_options: { include_usage: true },
});
let usage = null;
for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
assert.equal(usage.prompt_tokens_details.cached_tokens, second.usage.prompt_tokens_details.cached_tokens);

// Another salt never finds the unsalted blocks.
const salted = await client.completions.create({ ...request, cache_salt: 'tenant-a' });
assert.equal(salted.usage.prompt_tokens_details.cached_tokens, 0);
assert.equal(salted.choices[0].text, first.choices[0].text);

const messages = [{ role: 'user', content: prompt }];
const chat = await client.chat.completions.create({ model: 'tandem', messages, max_tokens: 8, temperature: 0 });
const chatAgain = await client.chat.completions.create({ model: 'tandem', messages, max_tokens: 8, temperature: 0 });
assert.equal(chat.usage.prompt_tokens_details.cached_tokens, 0);
assert.ok(chatAgain.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(chatAgain.usage));
assert.equal(chatAgain.choices[0].message.content, chat.choices[0].message.content);

// A bad salt is the client's BadRequestError naming the field.
await assert.rejects(client.completions.create({ ...request, cache_salt: 7 }),
  (error) => error instanceof OpenAI.BadRequestError && error.param === 'cache_salt');
console.log('openai client: prefix caching OK');

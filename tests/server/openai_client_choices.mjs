// The official `openai` npm client and several choices per request: n on
// /v1/completions and /v1/chat/completions, whole and streamed (chunks
// carry their choice's index), prompt lists, and n / best_of / prompt
// refused with the field named. Run by run_openai_client.sh.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'not-needed', maxRetries: 0 });
// A fixed γ (our extension): seeded sampled text replays exactly.
const sampled = {
  model: 'tandem', prompt: 'The history of the city', max_tokens: 16, temperature: 1, seed: 9,
  ignore_eos: true, speculation: { gamma: 4 },
};

// n on completions: n choices, indexed, reproducible, choice 0 = n = 1.
const four = await client.completions.create({ ...sampled, n: 4 });
assert.deepEqual(four.choices.map((c) => c.index), [0, 1, 2, 3]);
assert.equal(new Set(four.choices.map((c) => c.text)).size, 4);
const one = await client.completions.create(sampled);
assert.equal(four.choices[0].text, one.choices[0].text);
assert.equal(four.usage.prompt_tokens, one.usage.prompt_tokens);
assert.equal(four.usage.completion_tokens, 4 * one.usage.completion_tokens);

// Streamed, every index gets its text and one finish; they add up to the whole.
const texts = ['', '', '', ''];
const finishes = [0, 0, 0, 0];
let usage = null;
for await (const chunk of await client.completions.create({
  ...sampled, n: 4, stream: true, stream_options: { include_usage: true },
})) {
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    texts[choice.index] += choice.text;
    if (choice.finish_reason) finishes[choice.index] += 1;
  }
}
assert.deepEqual(texts, four.choices.map((c) => c.text));
assert.deepEqual(finishes, [1, 1, 1, 1]);
assert.deepEqual(usage, four.usage);

// A prompt list (strings and token ids): choices prompt × n + i, each as its single request.
const prompts = ['The old man', 'She said that'];
const batch = await client.completions.create({ model: 'tandem', prompt: prompts, n: 2, max_tokens: 8, temperature: 0 });
assert.equal(batch.choices.length, 4);
for (const [p, prompt] of prompts.entries()) {
  const single = await client.completions.create({ model: 'tandem', prompt, max_tokens: 8, temperature: 0 });
  assert.equal(batch.choices[2 * p].text, single.choices[0].text);
  assert.equal(batch.choices[2 * p + 1].text, single.choices[0].text);
}

// n on chat: each choice its own message, streamed by index.
const chatBody = {
  model: 'tandem', messages: [{ role: 'user', content: 'Tell me about the old city.' }],
  max_tokens: 12, temperature: 1, seed: 3, speculation: { gamma: 4 }, n: 3,
};
const chat = await client.chat.completions.create(chatBody);
assert.deepEqual(chat.choices.map((c) => c.index), [0, 1, 2]);
for (const choice of chat.choices) assert.equal(choice.message.role, 'assistant');
const contents = ['', '', ''];
for await (const chunk of await client.chat.completions.create({ ...chatBody, stream: true })) {
  for (const choice of chunk.choices) contents[choice.index] += choice.delta.content ?? '';
}
assert.deepEqual(contents, chat.choices.map((c) => c.message.content));

// Refusals name the field.
const refusedNaming = (param) => (error) =>
  error instanceof OpenAI.BadRequestError && error.status === 400 && error.param === param;
await assert.rejects(client.completions.create({ ...sampled, n: 0 }), refusedNaming('n'));
await assert.rejects(client.chat.completions.create({ ...chatBody, n: 99 }), refusedNaming('n'));
await assert.rejects(client.completions.create({ ...sampled, n: 3, best_of: 2 }), refusedNaming('best_of'));
await assert.rejects(
  client.completions.create({ ...sampled, best_of: 3, stream: true }), refusedNaming('best_of'));
await assert.rejects(client.completions.create({ ...sampled, prompt: [] }), refusedNaming('prompt'));
await assert.rejects(client.completions.create({ ...sampled, prompt: ['ok', ''] }), refusedNaming('prompt'));

console.log('openai npm client (choices): all checks passed');

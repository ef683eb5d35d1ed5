// The official `openai` npm client with the logit-processing fields: OpenAI's
// own (presence_penalty, frequency_penalty, logit_bias) and vLLM's passed
// through (repetition_penalty, min_p, min_tokens, stop_token_ids) on both
// endpoints; a bad logit_bias surfaces as a BadRequestError naming it.
// Run by run_openai_client.sh.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'not-needed', maxRetries: 0 });
const base = {
  model: 'tandem', prompt: 'The history of the city', max_tokens: 40, temperature: 0, ignore_eos: true,
};
const penalties = {
  presence_penalty: 0.8, frequency_penalty: 0.5, repetition_penalty: 1.3, min_p: 0.1,
  min_tokens: 4, logit_bias: { 17: 3, 42: -100 },
};

const plain = await client.completions.create(base);
const penalized = await client.completions.create({ ...base, ...penalties });
assert.ok(penalized.choices[0].text.length > 0);
assert.notEqual(penalized.choices[0].text, plain.choices[0].text, `${penalized.choices[0].text} | ${plain.choices[0].text}`);
// Greedy: the same again, and the same with speculation off.
const again = await client.completions.create({ ...base, ...penalties, speculation: false });
assert.equal(again.choices[0].text, penalized.choices[0].text);

const chat = await client.chat.completions.create({
  model: 'tandem', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8, temperature: 0,
  ...penalties,
});
assert.ok(['stop', 'length'].includes(chat.choices[0].finish_reason));

await assert.rejects(
  client.completions.create({ ...base, logit_bias: { nope: 1 } }),
  (error) => error instanceof OpenAI.BadRequestError && error.param === 'logit_bias',
);
await assert.rejects(
  client.completions.create({ ...base, presence_penalty: 2.5 }),
  (error) => error instanceof OpenAI.BadRequestError && error.param === 'presence_penalty',
);
console.log('penalties: ok');

// The official `openai` npm client with the coupling (docs/serving.md, "Seeds
// and the coupling"): a seeded sampled request runs the Gumbel coupling under
// the default `auto` and gives the same text whatever γ and with speculation
// off; an unseeded one runs rejection; speculation.coupling passes through
// the client on both endpoints and a bad one is a BadRequestError naming it.
// Run by run_openai_client.sh.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'not-needed', maxRetries: 0 });
const base = {
  model: 'tandem', prompt: 'When the war ended', max_tokens: 24, temperature: 0.9, top_p: 0.9, seed: 31,
  ignore_eos: true,
};

const texts = [];
for (const speculation of [false, { gamma: 'auto' }, { gamma: 2 }, { gamma: 6, pipeline: false }]) {
  const reply = await client.completions.create({ ...base, speculation });
  assert.equal(reply.speculation.coupling, 'gumbel', JSON.stringify(speculation));
  texts.push(reply.choices[0].text);
}
for (const text of texts) assert.equal(text, texts[0], texts.join(' | '));

const { seed, ...unseeded } = base;
assert.equal((await client.completions.create(unseeded)).speculation.coupling, 'rejection');
const asked = await client.completions.create({ ...base, speculation: { coupling: 'rejection' } });
assert.equal(asked.speculation.coupling, 'rejection');

const messages = [{ role: 'user', content: 'Tell me about the old city.' }];
const chat = await client.chat.completions.create({
  model: 'tandem', messages, max_tokens: 8, temperature: 0.8, seed: 5,
});
assert.equal(chat.speculation.coupling, 'gumbel');
const stream = await client.chat.completions.create({
  model: 'tandem', messages, max_tokens: 8, temperature: 0.8, seed: 5, stream: true,
  stream_options: { include_usage: true },
});
let last;
for await (const chunk of stream) last = chunk;
assert.equal(last.speculation.coupling, 'gumbel');

for (const endpoint of [
  () => client.completions.create({ ...base, speculation: { coupling: 'gumble' } }),
  () => client.chat.completions.create({ model: 'tandem', messages, speculation: { coupling: 7 } }),
]) {
  await assert.rejects(
    endpoint(),
    (error) => error instanceof OpenAI.BadRequestError && error.param === 'speculation.coupling',
  );
}
console.log('coupling: ok');

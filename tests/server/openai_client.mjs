// The official `openai` npm client against a running `tandem serve`:
// non-streaming and streaming completions, the model list, and errors
// surfacing as the client's typed exceptions. Run by run_openai_client.sh.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'not-needed', maxRetries: 0 });
const request = { model: 'tandem', prompt: 'The history of the city', max_tokens: 24 };

const models = await client.models.list();
assert.equal(models.data[0].id, 'tandem');

// Whole responses, greedy and seeded.
const greedy = await client.completions.create({ ...request, temperature: 0 });
assert.equal(greedy.object, 'text_completion');
assert.equal(greedy.choices.length, 1);
assert.ok(greedy.choices[0].text.length > 0);
assert.ok(['stop', 'length'].includes(greedy.choices[0].finish_reason));
assert.equal(greedy.usage.total_tokens, greedy.usage.prompt_tokens + greedy.usage.completion_tokens);
assert.equal(greedy.speculation.lossless, true);
const again = await client.completions.create({ ...request, temperature: 0 });
assert.equal(again.choices[0].text, greedy.choices[0].text);

// A fixed γ (our extension, passed through by the client) makes seeded
// sampled text replay exactly; with γ = auto it depends on load.
const sampled = { ...request, temperature: 0.8, seed: 42, speculation: { gamma: 4 } };
const seeded = await client.completions.create(sampled);

// Streaming the same seeded request gives the same text, chunk by chunk.
const stream = await client.completions.create({
  ...sampled, stream: true, stream_options: { include_usage: true },
});
let text = '';
let finish = null;
let usage = null;
let chunks = 0;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    text += choice.text;
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  chunks += 1;
}
assert.equal(text, seeded.choices[0].text);
assert.equal(finish, seeded.choices[0].finish_reason);
assert.equal(usage.completion_tokens, seeded.usage.completion_tokens);
assert.ok(chunks >= 2, `expected several chunks, got ${chunks}`);

// Errors come back as the client's typed exceptions with the field named.
await assert.rejects(
  client.completions.create({ ...request, temperature: 5 }),
  (error) => error instanceof OpenAI.BadRequestError && error.status === 400 && error.param === 'temperature',
);
await assert.rejects(
  client.completions.create({ ...request, model: 'gpt-nothing' }),
  (error) => error instanceof OpenAI.NotFoundError && error.status === 404,
);

console.log(`openai client: all checks passed (${chunks} stream chunks)`);

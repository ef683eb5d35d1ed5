// The official `openai` npm client against a running `tandem serve`:
// non-streaming and streaming completions and chat completions (tools and
// include_usage too), the model list, and errors surfacing as the client's
// typed exceptions. Run by run_openai_client.sh.
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

// Chat: the tiny pair's template is plain-text markers (models/tiny/README.md).
const messages = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Tell me about the old city.' },
];
const chat = await client.chat.completions.create({ model: 'tandem', messages, max_tokens: 16, temperature: 0 });
assert.equal(chat.object, 'chat.completion');
assert.ok(chat.id.startsWith('chatcmpl-'));
assert.equal(chat.choices[0].message.role, 'assistant');
assert.equal(typeof chat.choices[0].message.content, 'string');
assert.ok(['stop', 'length'].includes(chat.choices[0].finish_reason));
assert.equal(chat.usage.total_tokens, chat.usage.prompt_tokens + chat.usage.completion_tokens);

// Streaming the same greedy request: the deltas add up to the whole content.
const chatStream = await client.chat.completions.create({
  model: 'tandem', messages, max_completion_tokens: 16, temperature: 0, stream: true,
  stream_options: { include_usage: true },
});
let chatText = '';
let chatRole = null;
let chatFinish = null;
let chatUsage = null;
for await (const chunk of chatStream) {
  assert.equal(chunk.object, 'chat.completion.chunk');
  if (chunk.usage) chatUsage = chunk.usage;
  for (const choice of chunk.choices) {
    if (choice.delta.role) chatRole = choice.delta.role;
    chatText += choice.delta.content ?? '';
    if (choice.finish_reason) chatFinish = choice.finish_reason;
  }
}
assert.equal(chatRole, 'assistant');
assert.equal(chatText, chat.choices[0].message.content);
assert.equal(chatFinish, chat.choices[0].finish_reason);
assert.equal(chatUsage.completion_tokens, chat.usage.completion_tokens);
assert.equal(chatUsage.prompt_tokens, chat.usage.prompt_tokens);

// Tools go to the template: the prompt grows by their description.
const tools = [{
  type: 'function',
  function: { name: 'get_weather', description: 'Weather in a city',
              parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
}];
const withTools = await client.chat.completions.create({ model: 'tandem', messages, tools, max_tokens: 4 });
assert.ok(withTools.usage.prompt_tokens > chat.usage.prompt_tokens);
assert.ok(['stop', 'length', 'tool_calls'].includes(withTools.choices[0].finish_reason));
if (withTools.choices[0].finish_reason === 'tool_calls') {
  assert.ok(withTools.choices[0].message.tool_calls.length > 0);
}

// Chat errors are typed too, the field named.
await assert.rejects(
  client.chat.completions.create({ model: 'tandem', messages: [{ role: 'robot', content: 'Hi' }] }),
  (error) => error instanceof OpenAI.BadRequestError && error.status === 400 && error.param === 'messages[0].role',
);
await assert.rejects(
  client.chat.completions.create({ model: 'tandem', messages: [{ role: 'user', content: 'Hi' }, { role: 'system', content: 'late' }] }),
  (error) => error instanceof OpenAI.BadRequestError && error.status === 400 &&
             error.message.includes('The system message must be the first message.'),
);

console.log(`openai client: all checks passed (${chunks} stream chunks)`);

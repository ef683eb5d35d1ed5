// The official `openai` npm client reading logprobs: completions with
// logprobs and echo (max_tokens 0 too, as lm-evaluation-harness scores a
// prompt), chat with logprobs and top_logprobs, and both streamed, whose
// chunks' logprobs must add up to the whole response's. Greedy requests,
// so streamed and whole give the same tokens. Run by run_openai_client.sh.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'not-needed', maxRetries: 0 });
const prompt = 'The history of the city';
const request = { model: 'tandem', prompt, max_tokens: 8, temperature: 0, logprobs: 2, ignore_eos: true };

// Completions: one entry per generated token, each with 2 alternatives.
const whole = await client.completions.create(request);
const logprobs = whole.choices[0].logprobs;
assert.equal(logprobs.tokens.length, whole.usage.completion_tokens);
assert.equal(logprobs.token_logprobs.length, logprobs.tokens.length);
assert.equal(logprobs.text_offset.length, logprobs.tokens.length);
for (const [i, top] of logprobs.top_logprobs.entries()) {
  assert.equal(Object.keys(top).length, 2);
  assert.ok(logprobs.token_logprobs[i] <= 0);
}

// Echo: the prompt comes first, its first token with no logprob.
const echoed = await client.completions.create({ ...request, echo: true });
assert.ok(echoed.choices[0].text.startsWith(prompt));
assert.equal(echoed.choices[0].text, prompt + whole.choices[0].text);
const echoedLogprobs = echoed.choices[0].logprobs;
assert.equal(echoedLogprobs.tokens.length, echoed.usage.prompt_tokens + echoed.usage.completion_tokens);
assert.equal(echoedLogprobs.token_logprobs[0], null);
assert.equal(echoedLogprobs.top_logprobs[0], null);
assert.deepEqual(echoedLogprobs.token_logprobs.slice(echoed.usage.prompt_tokens), logprobs.token_logprobs);

// Scoring a prompt: echo with max_tokens 0.
const scored = await client.completions.create({ ...request, echo: true, max_tokens: 0, logprobs: 1 });
assert.equal(scored.choices[0].text, prompt);
assert.equal(scored.usage.completion_tokens, 0);
assert.equal(scored.choices[0].logprobs.tokens.length, scored.usage.prompt_tokens);

// Streamed completions: the chunks' logprobs concatenate to the whole's.
const merged = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
let text = '';
for await (const chunk of await client.completions.create({ ...request, stream: true })) {
  for (const choice of chunk.choices) {
    text += choice.text;
    if (!choice.logprobs) continue;
    for (const key of Object.keys(merged)) merged[key].push(...choice.logprobs[key]);
  }
}
assert.equal(text, whole.choices[0].text);
assert.deepEqual(merged, logprobs);

// Chat: logprobs with top_logprobs, whole and streamed.
const messages = [{ role: 'user', content: 'Tell me about the city' }];
const chatRequest = { model: 'tandem', messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3 };
const chat = await client.chat.completions.create(chatRequest);
const content = chat.choices[0].logprobs.content;
assert.equal(content.length, chat.usage.completion_tokens);
for (const entry of content) {
  assert.equal(entry.top_logprobs.length, 3);
  assert.ok(Array.isArray(entry.bytes));
  assert.equal(entry.top_logprobs[0].token, entry.token);
}
const streamed = [];
for await (const chunk of await client.chat.completions.create({ ...chatRequest, stream: true })) {
  for (const choice of chunk.choices) streamed.push(...(choice.logprobs?.content ?? []));
}
assert.deepEqual(streamed, content);

// top_logprobs without logprobs is refused, naming it.
await assert.rejects(
  client.chat.completions.create({ ...chatRequest, logprobs: false }),
  (error) => error instanceof OpenAI.BadRequestError && error.param === 'top_logprobs',
);

console.log(`openai client logprobs: all checks passed (${content.length} chat tokens)`);

// The official OpenAI Node SDK against tandem-server: one non-streaming and one streaming chat
// completion (greedy, so the two must agree), usage with cached tokens, and the SDK's own error
// class for a wrong API key.
//
//   node openai_sdk_test.js BASE_URL API_KEY      (BASE_URL like http://127.0.0.1:PORT/v1)
'use strict';
const OpenAI = require('openai');

const [baseURL, apiKey] = process.argv.slice(2);
if (!baseURL || !apiKey) {
  console.error('usage: node openai_sdk_test.js BASE_URL API_KEY');
  process.exit(2);
}

let failures = 0;
function check(cond, what) {
  if (cond) {
    console.log('ok   ' + what);
  } else {
    console.log('FAIL ' + what);
    failures++;
  }
}

async function main() {
  const client = new OpenAI({ baseURL, apiKey, timeout: 60000, maxRetries: 0 });
  const messages = [
    { role: 'system', content: 'You operate a phone. Answer with one JSON action.' },
    { role: 'user', content: 'Task: open the settings. Screen: [0] Settings [1] Camera' },
  ];
  const models = await client.models.list();
  const model = models.data[0].id;
  check(typeof model === 'string' && model.length > 0, 'models.list() names the served model: ' + model);

  const whole = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0 });
  const content = whole.choices[0].message.content;
  check(whole.object === 'chat.completion', 'non-streaming: object chat.completion');
  check(typeof content === 'string', 'non-streaming: message content is a string');
  check(['stop', 'length'].includes(whole.choices[0].finish_reason), 'non-streaming: finish_reason ' + whole.choices[0].finish_reason);
  check(whole.usage.prompt_tokens > 0 && whole.usage.completion_tokens > 0, 'non-streaming: usage ' + JSON.stringify(whole.usage));
  check(typeof whole.usage.prompt_tokens_details.cached_tokens === 'number', 'non-streaming: usage.prompt_tokens_details.cached_tokens');

  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let streamed = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length > 0) {
      streamed += chunk.choices[0].delta.content || '';
      if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    }
  }
  check(chunks >= 3, 'streaming: ' + chunks + ' chunks');
  check(streamed === content, 'streaming: the same text as the non-streaming answer');
  check(finish === whole.choices[0].finish_reason, 'streaming: finish_reason ' + finish);
  check(usage && usage.completion_tokens === whole.usage.completion_tokens, 'streaming: usage chunk');
  check(usage && usage.prompt_tokens_details.cached_tokens > 0, 'streaming: the repeated prompt reused cached tokens (' +
        (usage && usage.prompt_tokens_details.cached_tokens) + ')');

  const wrong = new OpenAI({ baseURL, apiKey: 'not-the-key', maxRetries: 0 });
  try {
    await wrong.chat.completions.create({ model, messages, max_tokens: 2 });
    check(false, 'a wrong key is refused');
  } catch (e) {
    check(e instanceof OpenAI.AuthenticationError && e.status === 401, 'a wrong key is refused with 401 (' + e.status + ')');
  }
  try {
    await client.chat.completions.create({ model, messages: [], max_tokens: 2 });
    check(false, 'empty messages are refused');
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400, 'empty messages: 400 BadRequestError (' + e.message + ')');
  }
}

main().then(
  () => {
    if (failures > 0) {
      console.log(failures + ' check(s) failed');
      process.exit(1);
    }
    console.log('PASSED');
  },
  (e) => {
    console.log('FAIL: ' + (e && e.stack ? e.stack : e));
    process.exit(1);
  });

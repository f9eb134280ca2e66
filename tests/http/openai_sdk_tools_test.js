// The official OpenAI Node SDK, unmodified, calling tools on tandem-server (issue 45) over a tiny
// random model whose chat template is one of the tool-call families (run_openai_sdk_test.sh starts one server each): tool_choice "required" answered
// with a valid call whole and streamed (the streamed deltas add up to the same call), a named
// function, and a tool-result round trip (the assistant's tool_calls as the SDK returned them,
// then a tool message answering its id, then an answer), whole and streamed; a tool_call_id that
// answers nothing is a 400 the SDK raises as BadRequestError.
//
//   node openai_sdk_tools_test.js BASE_URL API_KEY      (BASE_URL like http://127.0.0.1:PORT/v1)
'use strict';
const OpenAI = require('openai');

const { args, check, finish } = require('./sdk_check');

const [baseURL, apiKey] = args('openai_sdk_tools_test.js');

const tools = [
  {
    type: 'function',
    function: {
      name: 'tap',
      description: 'Tap an element of the screen',
      parameters: {
        type: 'object',
        properties: { index: { type: 'integer', minimum: 0, maximum: 99 }, long_press: { type: 'boolean' } },
        required: ['index'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'scroll',
      parameters: { type: 'object', properties: { direction: { type: 'string', enum: ['up', 'down'] } }, required: ['direction'] },
    },
  },
];

// The call's arguments parse and fit the tool's schema.
function validCall(call) {
  if (!call || call.type !== 'function' || typeof call.id !== 'string') return false;
  let args;
  try {
    args = JSON.parse(call.function.arguments);
  } catch (e) {
    return false;
  }
  if (call.function.name === 'tap') {
    return Number.isInteger(args.index) && args.index >= 0 && args.index <= 99 &&
      (args.long_press === undefined || typeof args.long_press === 'boolean') &&
      Object.keys(args).every((k) => k === 'index' || k === 'long_press');
  }
  if (call.function.name === 'scroll') {
    return (args.direction === 'up' || args.direction === 'down') && Object.keys(args).length === 1;
  }
  return false;
}

// A streamed answer put together as OpenAI's docs do: content, and tool calls by index.
async function collect(stream) {
  let content = '';
  let finish = null;
  const calls = [];
  for await (const chunk of stream) {
    if (chunk.choices.length === 0) continue;
    const ch = chunk.choices[0];
    content += ch.delta.content || '';
    for (const d of ch.delta.tool_calls || []) {
      if (!calls[d.index]) calls[d.index] = { id: '', type: 'function', function: { name: '', arguments: '' } };
      const c = calls[d.index];
      if (d.id) c.id = d.id;
      if (d.function && d.function.name) c.function.name += d.function.name;
      if (d.function && d.function.arguments) c.function.arguments += d.function.arguments;
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  return { content, calls, finish };
}

async function main() {
  const client = new OpenAI({ baseURL, apiKey, timeout: 60000, maxRetries: 0 });
  const model = (await client.models.list()).data[0].id;
  const user = { role: 'user', content: 'Open the menu: it is element 3.' };
  // One call per answer: the random model, greedy, would repeat calls up to max_tokens.
  const base = {
    model, tools, max_tokens: 200, temperature: 0, parallel_tool_calls: false, chat_template_kwargs: { enable_thinking: false },
  };

  // tool_choice "required", whole and streamed (greedy: the same call).
  const whole = await client.chat.completions.create({ ...base, messages: [user], tool_choice: 'required' });
  const wc = whole.choices[0];
  check(wc.finish_reason === 'tool_calls', 'required: finish_reason tool_calls (' + wc.finish_reason + ')');
  check(wc.message.tool_calls && wc.message.tool_calls.length >= 1 && wc.message.tool_calls.every(validCall),
        'required: valid tool_calls ' + JSON.stringify(wc.message.tool_calls));
  check(wc.message.content === null, 'required: no content');
  const streamed = await collect(await client.chat.completions.create({
    ...base, messages: [user], tool_choice: 'required', stream: true,
  }));
  check(streamed.finish === 'tool_calls', 'required, streamed: finish_reason tool_calls');
  check(streamed.calls.length === wc.message.tool_calls.length && streamed.calls.every(validCall) &&
        streamed.calls.every((c, i) => c.function.name === wc.message.tool_calls[i].function.name &&
                                       c.function.arguments === wc.message.tool_calls[i].function.arguments),
        'required, streamed: the deltas add up to the same calls ' + JSON.stringify(streamed.calls));

  // A named function, several seeds: always that one.
  let named = 0;
  for (let seed = 0; seed < 5; seed++) {
    const r = await client.chat.completions.create({
      ...base, messages: [user], temperature: 1, seed,
      tool_choice: { type: 'function', function: { name: 'scroll' } },
    });
    const calls = r.choices[0].message.tool_calls || [];
    if (calls.length === 1 && calls[0].function.name === 'scroll' && validCall(calls[0])) named++;
  }
  check(named === 5, 'named function: 5 of 5 answers call scroll (' + named + ')');

  // The round trip: the assistant message as the SDK returned it, the tool's result, an answer.
  const assistant = wc.message;
  const messages = [
    user,
    assistant,
    ...assistant.tool_calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: JSON.stringify({ ok: true }) })),
  ];
  const answer = await client.chat.completions.create({ ...base, messages, max_tokens: 12 });
  const ac = answer.choices[0];
  check(['stop', 'length', 'tool_calls'].includes(ac.finish_reason), 'round trip: answered (' + ac.finish_reason + ')');
  check(answer.usage.prompt_tokens > whole.usage.prompt_tokens + 10,
        'round trip: the call and its result are in the prompt (' + answer.usage.prompt_tokens + ' > ' + whole.usage.prompt_tokens + ')');
  check((ac.message.tool_calls || []).every(validCall), 'round trip: any call in the answer is valid');
  const answerStreamed = await collect(await client.chat.completions.create({ ...base, messages, max_tokens: 12, stream: true }));
  check(answerStreamed.content === (ac.message.content || '') && answerStreamed.finish === ac.finish_reason,
        'round trip, streamed: the same answer');
  const required = await client.chat.completions.create({ ...base, messages, tool_choice: 'required' });
  check(required.choices[0].message.tool_calls.every(validCall), 'round trip: a required next call is valid');

  try {
    await client.chat.completions.create({
      ...base, messages: [user, assistant, { role: 'tool', tool_call_id: 'call_nothing', content: 'ok' }],
    });
    check(false, 'a tool_call_id that answers no call is refused');
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400 && /tool_call_id/.test(e.message),
          'a tool_call_id that answers no call: 400 BadRequestError (' + e.message + ')');
  }
}

finish(main());

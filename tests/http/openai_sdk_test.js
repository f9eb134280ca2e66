// The official OpenAI Node SDK against tandem-server: one non-streaming and one streaming chat
// completion (greedy, so the two must agree), usage with cached tokens, the SDK's own error
// class for a wrong API key, any model name with logprobs, and a screenshot step: an image content part (a PNG data: URL made
// here), its tokens in usage, the same screen again answered alike, a remote URL refused.
//
//   node openai_sdk_test.js BASE_URL API_KEY      (BASE_URL like http://127.0.0.1:PORT/v1)
'use strict';
const OpenAI = require('openai');

const { args, check, finish } = require('./sdk_check');

const [baseURL, apiKey] = args('openai_sdk_test.js');

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
  // Any model name works (one model is served) and is echoed; logprobs as the SDK types them.
  const lp = await client.chat.completions.create({
    model: 'gpt-4o-mini', messages, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2,
  });
  check(lp.model === 'gpt-4o-mini', 'another model name is accepted and echoed: ' + lp.model);
  const lpContent = lp.choices[0].logprobs && lp.choices[0].logprobs.content;
  check(Array.isArray(lpContent) && lpContent.length === lp.usage.completion_tokens,
        'logprobs: one entry per output token (' + (lpContent && lpContent.length) + ')');
  check(lpContent && lpContent.every((e) => typeof e.token === 'string' && e.logprob <= 0 && e.top_logprobs.length === 2 &&
                                        e.top_logprobs[0].token === e.token),
        'logprobs: token, logprob <= 0, two alternatives, the greedy pick first');
  await screenshot(client, model);
  try {
    await client.chat.completions.create({ model, messages: [], max_tokens: 2 });
    check(false, 'empty messages are refused');
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400, 'empty messages: 400 BadRequestError (' + e.message + ')');
  }
}

// A w x h RGB PNG of a fixed pattern (zlib from Node itself; CRC-32 per chunk).
function png(w, h) {
  const zlib = require('zlib');
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;  // bit depth
  ihdr[9] = 2;  // RGB
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    raw[y * (w * 3 + 1)] = 0;  // filter: none
    for (let x = 0; x < w; x++)
      for (let c = 0; c < 3; c++) raw[y * (w * 3 + 1) + 1 + x * 3 + c] = (x * 7 + y * 13 + c * 50) & 0xff;
  }
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
                        chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

async function screenshot(client, model) {
  const url = 'data:image/png;base64,' + png(96, 64).toString('base64');
  const ask = (imageUrl) => client.chat.completions.create({
    model, max_tokens: 6, temperature: 0,
    messages: [{ role: 'user', content: [
      { type: 'text', text: 'Which control opens the settings?' },
      { type: 'image_url', image_url: { url: imageUrl } },
    ] }],
  });
  const text = await client.chat.completions.create({
    model, max_tokens: 6, temperature: 0, messages: [{ role: 'user', content: 'Which control opens the settings?' }],
  });
  const first = await ask(url);
  check(first.object === 'chat.completion' && typeof first.choices[0].message.content === 'string',
        'screenshot: an image_url part is answered');
  check(first.usage.prompt_tokens > text.usage.prompt_tokens + 4,
        'screenshot: the image rows count as prompt tokens (' + first.usage.prompt_tokens + ' vs ' +
        text.usage.prompt_tokens + ' without the image)');
  const again = await ask(url);
  check(again.choices[0].message.content === first.choices[0].message.content, 'screenshot: the same screen, the same answer');
  try {
    await ask('https://example.com/screen.png');
    check(false, 'screenshot: a remote URL is refused');
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400, 'screenshot: a remote URL is a 400 (' + e.message + ')');
  }
}

finish(main());

// Deterministic chat-template test cases (message lists + options), printed as a JSON array.
//   node gen_chat_cases.js [--vision] > cases.json
// --vision adds cases with content parts (images / videos), which only the Qwen3.5 template
// accepts. Cases exercise: system/user/assistant/tool turns, multi-turn history, <think> in
// content and reasoning_content, tool definitions and tool calls, consecutive tool results,
// multi-step tool loops, generation prompt on/off, enable_thinking true/false/unset, Unicode,
// surrounding whitespace, and the inputs the templates reject.
"use strict";
let seed = 0x51ed2701;
function rnd() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];
const ri = (a, b) => a + Math.floor(rnd() * (b - a + 1));
const vision = process.argv.includes("--vision");

const userTexts = ["Open the Settings app and turn on Wi-Fi.", "帮我订一张明天去上海的火车票。", "What's 2+2?", "  padded question  \n",
  "Tap the blue button 🔵 then scroll down.", "Line one\nLine two\n\nLine four", "Résumé für Zürich — naïve café", "<b>not a tag</b> & stuff",
  "Explain <think> tags literally", "multi\r\nline\r\nwindows"];
const assistantTexts = ["Sure, opening Settings now.", "好的，正在为您查询。", "4", "\n\nLeading newlines answer", "Done ✅",
  "<think>\nThe user wants Wi-Fi.\n</think>\n\nI turned on Wi-Fi.", "<think>short</think>Answer after think",
  "prefix <think>\nreasoning\n</think>\n\nfinal", "No think here but </think> appears", "  spaced answer  "];
const systemTexts = ["You are a helpful GUI agent.", "你是一个手机操作助手。", "Be concise.\nUse JSON.", "  System with spaces  "];
const tools = [
  { type: "function", function: { name: "tap", description: "Tap an element", parameters: { type: "object", properties: { element: { type: "integer", description: "Element id" } }, required: ["element"] } } },
  { type: "function", function: { name: "type_text", description: "Type text into the focused field", parameters: { type: "object", properties: { text: { type: "string" }, submit: { type: "boolean" } }, required: ["text"] } } },
  { type: "function", function: { name: "scroll", description: "Scroll the screen — up or down", parameters: { type: "object", properties: { direction: { type: "string", enum: ["up", "down"] } } } } },
];
const toolCalls = [
  { type: "function", function: { name: "tap", arguments: { element: 17 } } },
  { type: "function", function: { name: "type_text", arguments: { text: "Trattoria Roma", lang: "it" } } },
  { type: "function", function: { name: "scroll", arguments: { direction: "down", steps: 3 } } },
  { type: "function", function: { name: "type_text", arguments: { text: "多行\n文本", meta: { a: [1, 2, "x"], b: { c: "d" } } } } },
  { name: "tap", arguments: { element: 2 } },
];
const toolResults = ["{\"ok\": true}", "Screen changed: Settings > Wi-Fi", "错误：元素不存在", "  result with spaces  ", "[1, 2, 3]"];

function turn(role) {
  if (role === "user") return { role, content: pick(userTexts) };
  if (role === "system") return { role, content: pick(systemTexts) };
  if (role === "tool") return { role, content: pick(toolResults) };
  const m = { role: "assistant", content: pick(assistantTexts) };
  if (rnd() < 0.2) m.reasoning_content = pick(["Thinking about it.", "\nneed to tap\n", "用户想要打开设置"]);
  return m;
}
function options(c) {
  const r = rnd();
  if (r < 0.3) c.enable_thinking = false;
  else if (r < 0.5) c.enable_thinking = true;
  c.add_generation_prompt = rnd() < 0.8;
  return c;
}

const cases = [];
// Fixed shapes.
cases.push({ messages: [{ role: "user", content: "Hello" }], add_generation_prompt: true });
cases.push({ messages: [{ role: "user", content: "Hello" }], add_generation_prompt: true, enable_thinking: false });
cases.push({ messages: [{ role: "system", content: "Sys" }, { role: "user", content: "Hi" }], add_generation_prompt: true, enable_thinking: true });
cases.push({ messages: [{ role: "system", content: "Sys" }, { role: "user", content: "Hi" }, { role: "assistant", content: "Hello!" }], add_generation_prompt: false });
cases.push({ messages: [{ role: "user", content: "A" }, { role: "assistant", content: "<think>\nr1\n</think>\n\nB" }, { role: "user", content: "C" }, { role: "assistant", content: "<think>\nr2\n</think>\n\nD" }], add_generation_prompt: false });
// Tool loop: user -> assistant(tool_calls) -> tool, tool -> assistant.
cases.push({ tools, messages: [{ role: "system", content: "Agent." }, { role: "user", content: "Book it" },
  { role: "assistant", content: "", tool_calls: [toolCalls[0], toolCalls[1]] }, { role: "tool", content: "ok" }, { role: "tool", content: "typed" }],
  add_generation_prompt: true });
cases.push({ tools, messages: [{ role: "user", content: "Go" }, { role: "assistant", content: "Let me tap.", tool_calls: [toolCalls[0]] },
  { role: "tool", content: "{\"screen\": \"home\"}" }, { role: "assistant", content: "Done." }], add_generation_prompt: false });
cases.push({ tools, messages: [{ role: "user", content: "Go" }], add_generation_prompt: true, enable_thinking: false });
// Multi-step: the last user message is a wrapped tool response.
cases.push({ messages: [{ role: "user", content: "Start" }, { role: "assistant", content: "<think>\nplan\n</think>\n\ncalling", tool_calls: [toolCalls[2]] },
  { role: "user", content: "<tool_response>\nscrolled\n</tool_response>" }, { role: "assistant", content: "<think>\nnext\n</think>\n\nok" }], add_generation_prompt: false });
// Random conversations.
while (cases.length < 70) {
  const c = { messages: [] };
  if (rnd() < 0.5) c.messages.push(turn("system"));
  if (rnd() < 0.3) c.tools = tools.slice(0, ri(1, 3));
  const n = ri(1, 4);
  for (let i = 0; i < n; i++) {
    c.messages.push(turn("user"));
    if (i === n - 1 && rnd() < 0.5) break;
    const a = turn("assistant");
    if (rnd() < 0.35) {
      a.tool_calls = Array.from({ length: ri(1, 2) }, () => pick(toolCalls));
      if (rnd() < 0.3) a.content = "";
      c.messages.push(a);
      for (let k = ri(1, 2); k > 0; k--) c.messages.push(turn("tool"));
      if (rnd() < 0.5) c.messages.push(turn("assistant"));
    } else {
      c.messages.push(a);
    }
  }
  cases.push(options(c));
}
if (vision) {
  const img = [{ type: "image" }, { type: "image", image: "file:///a.png" }, { image_url: { url: "http://x/y.png" } }, { type: "video", video: "v.mp4" }];
  for (let i = 0; i < 16; i++) {
    const parts = [];
    for (let k = ri(1, 4); k > 0; k--) parts.push(rnd() < 0.5 ? pick(img) : { type: "text", text: pick(userTexts) });
    const c = { messages: [{ role: "user", content: parts }] };
    if (rnd() < 0.5) c.messages.unshift({ role: "system", content: [{ type: "text", text: pick(systemTexts) }] });
    if (rnd() < 0.5) c.messages.push({ role: "assistant", content: pick(assistantTexts) }, { role: "user", content: [pick(img), { type: "text", text: "and this?" }] });
    if (rnd() < 0.3) c.add_vision_id = true;
    cases.push(options(c));
  }
  // Inputs the Qwen3.5 template rejects.
  cases.push({ messages: [{ role: "system", content: "only system" }], add_generation_prompt: true });
  cases.push({ messages: [{ role: "user", content: "a" }, { role: "system", content: "late system" }], add_generation_prompt: true });
  cases.push({ messages: [{ role: "system", content: [{ type: "image" }] }, { role: "user", content: "x" }], add_generation_prompt: true });
  cases.push({ messages: [{ role: "user", content: "x" }, { role: "narrator", content: "y" }], add_generation_prompt: true });
  cases.push({ messages: [{ role: "user", content: [{ type: "audio" }] }], add_generation_prompt: true });
}
process.stdout.write(JSON.stringify(cases, null, 1) + "\n");

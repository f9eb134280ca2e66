// Deterministic tokenizer test corpus: prints one record per line, base64 of the record's bytes
// (records contain newlines, CRs and invalid UTF-8, so they cannot be plain lines).
//   node gen_corpus.js [n_records] > corpus.b64
// Categories: English, contractions, Chinese, code, emoji, numbers, whitespace runs, special
// tokens, broken UTF-8, other scripts with combining marks (NFC), random Unicode, long prompts.
// Only characters assigned in Unicode <= 15.0 are used (the C++ side uses the system ICU).
"use strict";

let seed = 0x7a3d1e55;
function rnd() {  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const ri = (a, b) => a + Math.floor(rnd() * (b - a + 1));  // inclusive
const pick = (arr) => arr[Math.floor(rnd() * arr.length)];
const rep = (n, f) => Array.from({ length: n }, f).join("");

const words = ("the of and to in is you that it he was for on are as with his they I at be this have from or one had " +
  "by word but not what all were we when your can said there use an each which she do how their if will up other " +
  "about out many then them these so some her would make like him into time has look two more write go see number " +
  "no way could people my than first water been call who oil its now find long down day did get come made may part " +
  "Agent screen button tap scroll Settings WiFi Bluetooth battery notification Google Chrome YouTube OpenAI Qwen " +
  "tokenizer naïve café résumé coöperate façade jalapeño Zürich São Paulo Ångström").split(" ");
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "'lL", "'x", "'", "''", "n't", "'em", "'twas", "’s", "‘quoted’"];
const punct = [".", ",", "!", "?", ";", ":", "...", "—", "–", "-", "(", ")", "[", "]", "{", "}", "\"", "'", "`", "~", "@", "#", "$", "%", "^", "&", "*", "_", "+", "=", "|", "\\", "/", "<", ">", "«", "»", "¿", "¡", "…", "·"];
const cjk = "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从知手本与爱吗呢吧啊请帮我打开设置页面搜索附近的餐厅今天天气怎么样";
const cjkPunct = ["，", "。", "、", "；", "：", "？", "！", "“", "”", "《", "》", "（", "）", "【", "】", "…", "—", "·"];
const japanese = ["こんにちは", "ありがとうございます", "カタカナ", "東京タワー", "ｶﾞｷﾞ", "ヴァイオリン", "が", "ぱ"];
const korean = ["안녕하세요", "감사합니다", "한국어", "설정"];
const emoji = ["😀", "😂", "🥲", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇨🇳", "🇺🇸", "❤️", "✅", "🔥", "🚀", "🤖", "🧑🏿‍💻", "⭐", "☕", "🎉", "🙏🏻", "🐍", "1️⃣", "#️⃣", "©️", "🫠", "🫶"];
const scripts = ["Привет, мир! Ёлка", "Γειά σου Κόσμε ά", "שָׁלוֹם עוֹלָם", "مرحبا بالعالم، كيف حالك؟", "नमस्ते दुनिया, क्या हाल है?",
  "สวัสดีชาวโลก ภาษาไทย", "Xin chào thế giới, Tiếng Việt", "வணக்கம் உலகம்", "হ্যালো বিশ্ব", "ሰላም ለዓለም", "გამარჯობა", "Բարեւ աշխարհ",
  "ᚠᛇᚻ᛫ᛒᛦᚦ", "Ꭰꮳꮃ", "ᠮᠣᠩᠭᠣᠯ", "ꦲꦏ꧀ꦱꦫ", "Ελληνικά ὅτι ῥῶ", "Ǆǅǆ ǈ ǋ ǲ", "ﬁ ﬂ ﬀ", "Åström Øre æble", "İstanbul ılık ĞÜŞ"];
// Text that NFC changes: decomposed accents, Angstrom/Ohm/Kelvin signs, Hangul jamo, CJK compatibility, U+0340.
const nfcBait = ["e\u0301", "A\u030A", "\u212B", "\u2126", "\u212A", "\u1100\u1161\u11A8", "\u1112\u1161\u11AB\u1100\u1173\u11AF",
  "\uF900\uF901", "a\u0340", "o\u0308\u0304", "\u0041\u0323\u0307", "\u0041\u0307\u0323", "\u1E9B\u0323", "\u0958", "\u2000",
  "n\u0303", "\u0928\u093C", "\u00C5", "\u0300", "\u0301\u0301\u0301", "ق\u0651\u064E", "ㄱㅏ", "\u0F73", "\u2ADC"];
const marksText = ["à la carte", "ñ", "a\u0308\u0301", "\u0915\u094D\u0937", "x\u20DD", "\u0E01\u0E34\u0E4C", "\u093E\u0915", " \u0301abc", "abc\u0301def", "\u0301", "1\u0301", "'\u0301s"];
const specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
  "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>",
  "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
  "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>"];
const nearSpecials = ["<|im_start", "<|im_start|", "im_start|>", "<|IM_START|>", "< |im_end|>", "<|im_end |>", "<<|im_end|>>",
  "<|endoftext|><|endoftext|>", "<think", "</think", "<thinking>", "<|>", "<||>", "|>", "<|", "<|im_end|><|im_start|>"];
const ws = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", "\r\n\r\n", " \n", "\n ", " \t\n", "\u00A0", "\u3000", "\u2028",
  "\u2029", "\u0085", "\uFEFF", "\u000B", "\u000C", "\u001C", "\u001F", "\u2003", "\u200B", "\u202F", "\u205F", "\u1680", " \u00A0 "];

function englishSentence() {
  let s = "";
  const n = ri(3, 18);
  for (let i = 0; i < n; i++) {
    let w = pick(words);
    if (rnd() < 0.15) w = w[0].toUpperCase() + w.slice(1);
    if (rnd() < 0.05) w = w.toUpperCase();
    if (rnd() < 0.1) w += pick(contractions);
    s += (i ? " " : "") + w;
    if (rnd() < 0.12) s += pick(punct);
  }
  return s + pick([".", "!", "?", "", "...", ".\n"]);
}
function chineseSentence() {
  let s = "";
  const n = ri(2, 40);
  for (let i = 0; i < n; i++) {
    s += cjk[ri(0, cjk.length - 1)];
    if (rnd() < 0.08) s += pick(cjkPunct);
    if (rnd() < 0.04) s += pick(words);
    if (rnd() < 0.03) s += String(ri(0, 2025));
  }
  return s;
}
function numberString() {
  const forms = [
    () => String(ri(0, 9)), () => String(ri(0, 1e9)), () => rep(ri(10, 60), () => String(ri(0, 9))),
    () => `${ri(0, 999)}.${ri(0, 99999)}`, () => `-${ri(1, 1e6)}`, () => `${ri(1, 999)},${String(ri(0, 999)).padStart(3, "0")},${String(ri(0, 999)).padStart(3, "0")}`,
    () => `${ri(1990, 2030)}-${String(ri(1, 12)).padStart(2, "0")}-${String(ri(1, 28)).padStart(2, "0")}`,
    () => `${ri(0, 23)}:${String(ri(0, 59)).padStart(2, "0")}`, () => `+86 ${ri(130, 199)} ${ri(1000, 9999)} ${ri(1000, 9999)}`,
    () => `${ri(1, 100)}%`, () => `$${ri(1, 9999)}.${ri(10, 99)}`, () => `0x${ri(0, 0xffffff).toString(16)}`, () => `${ri(1, 9)}e-${ri(1, 30)}`,
    () => "١٢٣٤٥", () => "१२३", () => "①②③", () => "ⅠⅡⅢⅣ", () => "½ ¾ ²³", () => "１２３４", () => "v1.2.3-rc4", () => "3.14159265358979",
  ];
  let s = "";
  const n = ri(1, 6);
  for (let i = 0; i < n; i++) s += pick(forms)() + pick([" ", "", ", ", "x", "\n", " and "]);
  return s;
}
const codeSnippets = [
  "def main(argv):\n    for i in range(10):\n        print(f\"{i:>4}\")\n    return 0\n",
  "int main(int argc, char** argv) {\n\tstd::vector<int> v{1, 2, 3};\n\treturn v.size() > 2 ? 0 : 1;\n}\n",
  "{\"action\": \"tap\", \"element\": 17, \"bounds\": [0, 96, 1080, 240]}",
  "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%an%';",
  "const x = arr.map((a) => a ** 2).filter(Boolean); // squares\n",
  "<div class=\"btn btn-primary\" onclick=\"go()\">Go &amp; see</div>",
  "if (x != nullptr && *x == '\\0') { return -EINVAL; }",
  "    \n        \n    return;\n",
  "#include <stdio.h>\r\n\r\nint main(void)\r\n{\r\n    printf(\"hi\\n\");\r\n}\r\n",
  "fn add(a: i32, b: i32) -> i32 { a + b }",
  "$ ls -la /tmp && echo \"done\" | grep -v '^#' > out.txt 2>&1",
  "x = [1,2,3]; y = {'a': (1, 2)}; z = x[::-1]",
  "/* comment */ a->b.c[i++] <<= 2; a >>>= 1; ...rest",
  "\t\tif err != nil {\n\t\t\treturn fmt.Errorf(\"failed: %w\", err)\n\t\t}",
  "@media (max-width: 600px) { .a::before { content: '→'; } }",
  "<tool_call>\n{\"name\": \"open_app\", \"arguments\": {\"app\": \"Settings\"}}\n</tool_call>",
];
function codeString() {
  let s = pick(codeSnippets);
  if (rnd() < 0.5) s = s.replace(/ {4}/g, () => " ".repeat(ri(1, 12)));
  if (rnd() < 0.3) s += pick(codeSnippets);
  return s;
}
function emojiString() {
  let s = "";
  const n = ri(1, 12);
  for (let i = 0; i < n; i++) s += pick([pick(emoji), pick(emoji) + pick(emoji), " " + pick(emoji), pick(words) + pick(emoji), pick(emoji) + "!", "\u200D", "\uFE0F"]);
  return s;
}
function wsString() {
  let s = "";
  const n = ri(1, 8);
  for (let i = 0; i < n; i++) {
    if (rnd() < 0.3) s += " ".repeat(ri(1, 300));
    else if (rnd() < 0.2) s += rep(ri(1, 20), () => pick(ws));
    else s += pick(ws);
    s += pick(["", pick(words), String(ri(0, 99)), pick(punct), pick(cjk.split("")), pick(emoji)]);
  }
  return s;
}
function specialString() {
  let s = "";
  const n = ri(1, 8);
  for (let i = 0; i < n; i++) {
    s += pick([pick(specials), pick(specials), pick(nearSpecials), pick(words), " ", "\n", pick(words) + pick(specials) + pick(words), "user\n", "assistant\n"]);
  }
  return s;
}
function scriptString() {
  let s = "";
  const n = ri(1, 5);
  for (let i = 0; i < n; i++) s += pick([pick(scripts), pick(nfcBait), pick(marksText), pick(japanese), pick(korean), pick(words)]) + pick([" ", "", "\n", ", "]);
  return s;
}
const ranges = [[0x20, 0x7e], [0xa0, 0xff], [0x100, 0x17f], [0x300, 0x36f], [0x391, 0x3a1], [0x3b1, 0x3c9], [0x400, 0x4ff],
  [0x5d0, 0x5ea], [0x591, 0x5c7], [0x620, 0x64a], [0x900, 0x97f], [0xe01, 0xe3a], [0x1100, 0x1112], [0x1161, 0x1175],
  [0x2010, 0x2027], [0x2030, 0x205e], [0x2070, 0x2071], [0x2160, 0x2188], [0x2190, 0x21ff], [0x2200, 0x22ff],
  [0x2460, 0x24ff], [0x2500, 0x257f], [0x2600, 0x26ff], [0x3000, 0x303f], [0x3041, 0x3096], [0x30a1, 0x30fa],
  [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0xf900, 0xfa2d], [0xff01, 0xff5e], [0x1f300, 0x1f5ff], [0x1f600, 0x1f64f],
  [0x20000, 0x2a6d6], [0x1d400, 0x1d454], [0x10400, 0x1044f]];
function randomUnicode() {
  let s = "";
  const n = ri(1, 40);
  for (let i = 0; i < n; i++) {
    const [a, b] = pick(ranges);
    const cp = ri(a, b);
    const ch = String.fromCodePoint(cp);
    if (/\p{Cn}|\p{Cs}/u.test(ch)) continue;
    s += ch;
  }
  return s;
}
function brokenUtf8() {
  const parts = [];
  const n = ri(1, 6);
  const bad = [[0x80], [0xbf], [0xc0, 0xaf], [0xc1, 0x81], [0xc3], [0xe4, 0xbd], [0xe4], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf],
    [0xe0, 0x80, 0xaf], [0xf0, 0x80, 0x80, 0xaf], [0xf4, 0x90, 0x80, 0x80], [0xf5], [0xff], [0xfe], [0xf0, 0x9f, 0x98],
    [0xf0, 0x9f], [0xef, 0xbb, 0xbf], [0xe2, 0x82], [0xc2], [0x00], [0x01, 0x7f], [0xf8, 0x88, 0x80, 0x80, 0x80]];
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.4) parts.push(Buffer.from(pick(bad)));
    else if (r < 0.55) parts.push(Buffer.from(Array.from({ length: ri(1, 8) }, () => ri(0x80, 0xff))));
    else parts.push(Buffer.from(pick([pick(words), " ", pick(cjk.split("")), pick(emoji), pick(specials), "\n", String(ri(0, 999))]), "utf8"));
  }
  // Cut a valid multi-byte string in the middle of a character.
  if (rnd() < 0.3) {
    const b = Buffer.from(chineseSentence(), "utf8");
    parts.push(b.subarray(0, Math.max(1, b.length - ri(1, 2))));
  }
  return Buffer.concat(parts);
}
function longPrompt() {
  let s = "<|im_start|>system\nYou are a GUI agent. Answer with one JSON action.<|im_end|>\n<|im_start|>user\n";
  const target = ri(2000, 12000);
  while (s.length < target) {
    s += pick([englishSentence(), chineseSentence(), codeString(), numberString(), wsString(), emojiString(), scriptString(),
      `  [${ri(0, 500)}] Button "${pick(words)}" bounds=[${ri(0, 1080)},${ri(0, 2400)}][${ri(0, 1080)},${ri(0, 2400)}]\n`]) + pick([" ", "\n", ""]);
  }
  if (rnd() < 0.3) s += " ".repeat(ri(500, 3000)) + "x";
  if (rnd() < 0.3) s += cjk.repeat(ri(2, 6));
  if (rnd() < 0.3) s += "a".repeat(ri(100, 2000));
  return s + "<|im_end|>\n<|im_start|>assistant\n";
}

const categories = [
  [900, englishSentence], [250, () => rep(ri(1, 6), () => pick(words) + pick(contractions) + pick([" ", "", "s", "S", "x"]))],
  [600, chineseSentence], [600, codeString], [400, emojiString], [500, numberString], [500, wsString], [500, specialString],
  [500, brokenUtf8], [600, scriptString], [400, randomUnicode], [60, longPrompt],
  [200, () => rep(ri(2, 5), () => pick([englishSentence, chineseSentence, codeString, numberString, wsString, emojiString, specialString, scriptString, randomUnicode])())],
];

const n = Number(process.argv[2] || 0);
const out = [];
// Fixed edge cases first.
for (const s of ["", " ", "  ", "\n", "\r\n", "a", "'", "'s", "I'm", "HELLO'LL", "1234567890", " 1", "  a", "a  ", "\t\ta", " \n\n a",
  "a\u0301", "\uFEFFBOM", "<|im_start|>", "<|im_start|><|im_start|>", "x<|im_end|>y", "  <think>  ", "\u3000\u3000中文"]) out.push(Buffer.from(s, "utf8"));
for (const [count, f] of categories) for (let i = 0; i < count; i++) {
  const r = f();
  out.push(Buffer.isBuffer(r) ? r : Buffer.from(r, "utf8"));
}
const records = n > 0 ? out.slice(0, n) : out;
process.stdout.write(records.map((b) => b.toString("base64")).join("\n") + "\n");

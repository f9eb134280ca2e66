// The grammar engine against grammars of the kinds in llama.cpp's grammars/ directory (issue 24:
// arithmetic, json, json_arr, list, chess, japanese, english, c), written here from scratch in
// llama.cpp's GBNF dialect (spec/constrained.md §2.1) so that the tests need no llama.cpp.
// gbnf_parser_test.cpp only checks that such grammars parse; here each one is compiled and must
//   - accept every sentence of its `accept` list in full (accepting after the last byte), and
//   - reject every string of its `reject` list for the stated reason: either the first byte of
//     `illegal` is not allowed after the (still live) prefix `live`, or, when `illegal` is empty,
//     `live` is a proper prefix of some sentence but not a sentence itself (incomplete).
// The same strings are then fed as tokens (the test vocabulary's tokenization) through a Matcher:
// a sentence ends with an end-of-generation token, a rejected string never gets that far.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_test_vocab.h"

namespace tandem::grammar {
namespace {

using testing::vocab;

struct Reject {
  std::string live;     // a live prefix
  std::string illegal;  // its first byte is not allowed after `live`; empty: `live` is incomplete
};

struct Example {
  const char* name;
  std::string gbnf;
  std::vector<std::string> accept;
  std::vector<Reject> reject;
};

// How many leading bytes of s stay live (s.size() when all of them do).
size_t live_bytes(CompiledGrammar& g, std::string_view s) {
  GrammarState st = g.initial();
  for (size_t i = 0; i < s.size(); ++i) {
    st = g.advance_bytes(st, s.substr(i, 1));
    if (st == kDeadState) return i;
  }
  return s.size();
}

// Feeds s as tokens through a Matcher, then an end-of-generation token: true when every token
// and the end are allowed (s is a complete sentence), false as soon as one is not.
bool accepts_as_tokens(const std::shared_ptr<CompiledGrammar>& g, const std::string& s) {
  Matcher m(g);
  for (const int32_t t : vocab().tok->encode(s, text::EncodeOptions{.parse_special = false}))
    if (!m.accept(t)) return false;
  const auto eos = vocab().tok->vocab().eos();
  if (!eos || !m.accept(*eos)) return false;
  return m.complete();
}

void check(const Example& ex) {
  SCOPED_TRACE(ex.name);
  std::shared_ptr<CompiledGrammar> g;
  ASSERT_NO_THROW(g = CompiledGrammar::compile(ex.gbnf, vocab().index)) << ex.gbnf;
  ASSERT_FALSE(ex.accept.empty());
  ASSERT_FALSE(ex.reject.empty());
  for (const std::string& s : ex.accept) {
    SCOPED_TRACE("accept: " + s);
    const GrammarState st = g->advance_bytes(g->initial(), s);
    ASSERT_NE(st, kDeadState) << "illegal byte at offset " << live_bytes(*g, s) << " after '"
                              << s.substr(0, live_bytes(*g, s)) << "'";
    EXPECT_TRUE(g->accepting(st)) << "incomplete";
    EXPECT_TRUE(accepts_as_tokens(g, s));
  }
  for (const Reject& r : ex.reject) {
    const std::string s = r.live + r.illegal;
    SCOPED_TRACE("reject: '" + r.live + "' + '" + r.illegal + "'");
    const GrammarState st = g->advance_bytes(g->initial(), r.live);
    ASSERT_NE(st, kDeadState) << "the prefix dies already at offset " << live_bytes(*g, r.live);
    if (r.illegal.empty()) {
      EXPECT_FALSE(g->accepting(st)) << "the prefix is a complete sentence";
      EXPECT_TRUE(g->can_continue(st));
    } else {
      EXPECT_EQ(g->advance_bytes(st, r.illegal.substr(0, 1)), kDeadState) << "the byte is allowed";
    }
    EXPECT_FALSE(accepts_as_tokens(g, s));
  }
}

// Arithmetic: one equation per line, C precedence, right-associative powers.
const char* kArithmetic = R"G(
root     ::= ( equation "\n" )+
equation ::= sum "=" sp sum
sum      ::= product ( [-+] sp product )*
product  ::= factor ( [*/%] sp factor )*
factor   ::= ( "-" sp )? ( number | name | "(" sp sum ")" sp ) ( "^" sp factor )?
number   ::= [0-9]+ ( "." [0-9]+ )? sp
name     ::= [a-zA-Z_] [a-zA-Z0-9_]* sp
sp       ::= [ \t]*
)G";

// JSON values (RFC 8259, with llama.cpp's guards: at most 16 integer digits, bounded whitespace).
// Whitespace is written where a value or token may be followed by it.
const char* kJsonValues = R"G(
value   ::= object | array | string | number | "true" | "false" | "null"
object  ::= "{" ws ( member ( "," ws member )* )? "}"
member  ::= string ws ":" ws value ws
array   ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string  ::= "\"" char* "\""
char    ::= [^"\\\x00-\x1F\x7F] | "\\" ( ["\\/bfnrt] | "u" hex hex hex hex )
hex     ::= [0-9a-fA-F]
number  ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws      ::= ( " " | "\t" | "\n" [ \t]{0,20} )?
)G";

// json: one object, optionally followed by whitespace.
std::string json_grammar() { return std::string("root ::= object ws\n") + kJsonValues; }
// json_arr: one array and nothing after its closing bracket.
std::string json_arr_grammar() {
  return std::string("root ::= \"[\" ws ( value ws ( \",\" ws value ws )* )? \"]\"\n") + kJsonValues;
}

// Bulleted list: one item a line, up to three levels of two-space indentation; no line breaks
// of any kind (CR, VT, FF, NEL, LS, PS) inside an item.
const char* kList = R"G(
root ::= item+
item ::= ( "  " ){0,3} [-*+] " " text "\n"
text ::= [^\n\r\x0B\x0C\u0085\u2028\u2029]+
)G";

// Chess movetext in SAN: numbered turns of one or two moves, an optional result.
const char* kChess = R"G(
root    ::= turn ( " " turn )* result?
turn    ::= [1-9] [0-9]{0,2} ". " move ( " " move )?
move    ::= ( castle | piece | pawn ) [+#]?
castle  ::= "O-O" ( "-O" )?
piece   ::= [KQRBN] [a-h]? [1-8]? "x"? square
pawn    ::= ( [a-h] "x" )? square ( "=" [QRBN] )?
square  ::= [a-h] [1-8]
result  ::= " " ( "1-0" | "0-1" | "1/2-1/2" )
)G";

// Japanese: phrases of kana, kanji, CJK punctuation and full/half-width forms, separated by one
// space or newline. Ranges by escape and by literal character.
const char* kJapanese = R"G(
root     ::= phrase ( [ \n] phrase )*
phrase   ::= jchar+
jchar    ::= hiragana | katakana | kanji | punct | wide
hiragana ::= [ぁ-ゖゝゞ]
katakana ::= [\u30A0-\u30FF\u31F0-\u31FF]
kanji    ::= [\u4E00-\u9FFF\u3400-\u4DBF]
punct    ::= [\u3000-\u303F]
wide     ::= [\uFF01-\uFF5E\uFF61-\uFF9F]
)G";

// English (ASCII) text: words of letters, digits and printable punctuation, separated by one
// space, tab or newline.
const char* kEnglish = R"G(
root  ::= word ( [ \t\n] word )*
word  ::= wchar+
wchar ::= [a-zA-Z] | [0-9] | [!-/:-@\[-`{-~]
)G";

// A small C: includes, global declarations and function definitions; statements (blocks,
// declarations, expressions, if/else, while, do/while, for, return, break/continue); expressions
// with C's precedence levels, casts, sizeof, calls, indexing, member access; comments anywhere
// whitespace may go. As in llama.cpp, a rule's alternatives continue on the next line only after
// a trailing "|" or inside parentheses (a line starting with "|" is an error at the top level).
const char* kC = R"G(
root        ::= ws external+
external    ::= include | function | declaration
include     ::= "#include" [ \t]* ( "<" path ">" | "\"" path "\"" ) [ \t]* "\n" ws
path        ::= [a-zA-Z0-9_./]+
function    ::= head "(" ws params? ")" ws block
declaration ::= head suffix ( "," ws ptr* ident ws suffix )* ";" ws
head        ::= ( ( "static" | "const" ) sp )* base ( sp ptr* | ws ptr+ ) ident ws
base        ::= "void" | "char" | "short" | "int" | "long" | "float" | "double"
ptr         ::= "*" ws
suffix      ::= ( "[" ws expr? "]" ws )? ( "=" ws init )?
init        ::= assign | "{" ws ( init ( "," ws init )* )? "}" ws
params      ::= "void" ws | param ( "," ws param )*
param       ::= head ( "[" ws "]" ws )?

block       ::= "{" ws stmt* "}" ws
stmt        ::= (
                block
              | declaration
              | expr ";" ws
              | ";" ws
              | "if" ws "(" ws expr ")" ws stmt ( "else" ( ws block | sp stmt ) )?
              | "while" ws "(" ws expr ")" ws stmt
              | "do" ( ws block | sp stmt ) "while" ws "(" ws expr ")" ws ";" ws
              | "for" ws "(" ws ( declaration | expr? ";" ws ) expr? ";" ws expr? ")" ws stmt
              | "return" ( sp expr? | ws ) ";" ws
              | ( "break" | "continue" ) ws ";" ws
              )

expr        ::= assign ( "," ws assign )*
assign      ::= cond ( assignop ws assign )?
assignop    ::= "=" | [-+*/%&|^] "=" | "<<=" | ">>="
cond        ::= logor ( "?" ws expr ":" ws cond )?
logor       ::= logand ( "||" ws logand )*
logand      ::= bitwise ( "&&" ws bitwise )*
bitwise     ::= equality ( [&|^] ws equality )*
equality    ::= relation ( ( "==" | "!=" ) ws relation )*
relation    ::= shift ( ( "<" | ">" | "<=" | ">=" ) ws shift )*
shift       ::= additive ( ( "<<" | ">>" ) ws additive )*
additive    ::= term ( [-+] ws term )*
term        ::= unary ( [*/%] ws unary )*
unary       ::= ( [-+!~*&] | "++" | "--" ) ws unary |
                "(" ws base ws ptr* ")" ws unary |
                "sizeof" ws "(" ws ( base ws ptr* | expr ) ")" ws |
                postfix
postfix     ::= primary ( ( "[" ws expr "]" | "(" ws args? ")" | "++" | "--" | ( "." | "->" ) ws ident ) ws )*
args        ::= assign ( "," ws assign )*
primary     ::= ( ident | number | charlit | strlit ) ws | "(" ws expr ")" ws

ident       ::= [a-zA-Z_] [a-zA-Z0-9_]*
number      ::= ( "0" [xX] [0-9a-fA-F]+ | ( [0-9]+ ( "." [0-9]* )? | "." [0-9]+ ) ( [eE] [-+]? [0-9]+ )? ) [uUlLfF]{0,2}
charlit     ::= "'" ( [^'\\\n] | "\\" escape ) "'"
strlit      ::= "\"" ( [^"\\\n] | "\\" escape )* "\""
escape      ::= [abfnrtv0\\'"?]

ws          ::= ( [ \t\n] | comment )*
sp          ::= ( [ \t\n] | comment ) ws
comment     ::= "//" [^\n]* "\n" | "/*" ( [^*] | "*"+ [^*/] )* "*"+ "/"
)G";

TEST(GbnfExamples, Arithmetic) {
  check({"arithmetic",
         kArithmetic,
         {
             "1+2=3\n",
             "x = 2 * (y + 3.5)\n",
             "a_1 / b - -c = 2^3^2 % 7\n",
             "10 - 4 = 6\n(2 + 3) * 4 = 20\n( -x ) = y\t\n",
         },
         {
             {"", ""},
             {"1+2=3", ""},  // no newline
             {"1+", "="},
             {"x = (1 + 2", "\n"},
             {"1 = 2 ", "="},
             {"1.", "="},
             {"x = 1\n", "\n"},
             {"3", "x"},
             {"2 * ", "*"},
             {"", " "},
             {"f", "("},  // no calls
         }});
}

TEST(GbnfExamples, Json) {
  check({"json",
         json_grammar(),
         {
             "{}",
             R"({"a":1})",
             R"({ "name" : "Tandem", "tags" : ["fast", "exact"], "ok" : true, "n" : null })",
             "{\n  \"a\": [\n    1,\n    -2.5e+3,\n    {\"b\": false}\n  ],\n  \"c\": {}\n}\n",
             R"({"s":"caf\u00e9 \"q\" \\ \/ \n\t\b\f\r","u":"日本語 é 😀"})",
             R"({"z":0,"neg":-0.5,"e":1E10,"f":6.02e-23,"big":-1234567890123456})",
             R"({"a":[],"b":[[]],"c":[{}],"d":{"e":{"f":[1,[2,[3]]]}}})",
             "{} ",
         },
         {
             {"", "["},  // the root is an object
             {"", " "},
             {R"({"a":1,)", "}"},
             {"{", "'"},
             {R"({"a" )", "1"},
             {R"({"a":tru)", "}"},
             {R"({"a":0)", "1"},
             {R"({"a":)", "."},
             {R"({"a":1.)", "}"},
             {R"({"a":1e)", "}"},
             {R"({"a":"\)", "q"},
             {R"({"a":"\u12)", "G"},
             {R"({"a":"x)", "\x01"},
             {R"({"a":"x)", "\t"},
             {R"({"a":")", "\x7F"},
             {R"({"a":")", "\xFF"},
             {"{\"a\":\"\xC3", "("},  // a broken UTF-8 character
             {R"({"a":1})", "}"},
             {R"({"a":)", "N"},
             {R"({"n":1234567890123456)", "7"},  // at most 16 digits
             {"{\n" + std::string(20, ' '), " "},  // at most 20 spaces of indentation
             {"{} ", " "},
             {R"({"a":[1,2)", "}"},
             {R"({"a":"abc)", ""},
             {R"({"a":1)", ""},
             {"{", ""},
         }});
}

TEST(GbnfExamples, JsonArr) {
  check({"json_arr",
         json_arr_grammar(),
         {
             "[]",
             "[ ]",
             R"([1, "a", {"k": [true, null]}])",
             "[\n  {\"a\": 1},\n  {\"b\": 2}\n]",
             "[[[]], -0, 0.25, \"\\u0041\"]",
         },
         {
             {"[1,2]", " "},  // nothing after the array
             {"[1,2]", "\n"},
             {"", "{"},
             {"[1,2", ""},
             {"[1 ", "2"},
             {"[", ","},
             {"[1,", "]"},
             {"[", ""},
         }});
}

TEST(GbnfExamples, List) {
  check({"list",
         kList,
         {
             "- milk\n",
             "- milk\n- eggs\n- flour, 2 cups\n",
             "* top\n  - nested\n    + deeper\n      - deepest\n",
             "- 日本語 and émoji 😀\n",
             "- a - b - c\n",
             "- tab\there\n",
         },
         {
             {"", ""},
             {"- milk", ""},
             {"-", "m"},
             {"- ", "\n"},
             {"- a", "\r"},
             {"- a\n", "\n"},
             {"- a\xE2\x80", "\xA8"},  // U+2028
             {"- a\xE2\x80", "\xA9"},  // U+2029
             {"- a\xC2", "\x85"},      // U+0085
             {"- a", "\x0B"},
             {"- a", "\x0C"},
             {"      ", " "},  // four levels
             {"", "1"},
             {" ", "-"},  // odd indentation
         }});
}

TEST(GbnfExamples, Chess) {
  check({"chess",
         kChess,
         {
             "1. e4",
             "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6",
             "1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0",
             "1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. O-O Nf6 5. d3 O-O",
             "41. a8=Q+ Rxa8 42. Rdxa8 R1e2 43. exd8=N 0-1",
             "100. Kh1 Qg2# 1/2-1/2",
         },
         {
             {"1. e", "9"},
             {"1. Ke", ""},
             {"1.", "e"},
             {"", "0"},
             {"1. ", "P"},
             {"1. ", "i"},
             {"1. e4 e5 2.", ""},
             {"1. e4 e5 1/2", ""},
             {"1. e4 e5 ", "*"},
             {"1. e4 ", " "},
             {"1. O-O-O", "-"},
             {"1. e4 e5 1-0", " "},  // nothing after the result
             {"100", "0"},
             {"1. e8=", "K"},
             {"", ""},
         }});
}

TEST(GbnfExamples, Japanese) {
  check({"japanese",
         kJapanese,
         {
             "こんにちは",
             "日本語を勉強しています。",
             "カタカナ ひらがな\n漢字",
             "東京、大阪、京都・奈良",
             "「はい」と言った。",
             "ＡＢＣ１２３！",
             "ｶﾀｶﾅ",
             "ラーメン　ください",  // U+3000 ideographic space inside a phrase
             "㐀",                  // CJK extension A
         },
         {
             {"", "h"},
             {"日本 ", ""},
             {"", ""},
             {"日本 ", " "},
             {"日本", "\t"},
             {"日本", "a"},
             {"\xE6\x97", ""},  // 日 cut short
             {"日\xE6\x97", "\xFF"},
             {"\xEF\xBD", "\x9F"},  // U+FF5F, past the full-width forms
             {"", "\xED"},          // Hangul (U+D55C)
             {"", "\xF0"},          // emoji
             {"", "\xC3"},          // é
             {"中\n", ""},
         }});
}

TEST(GbnfExamples, English) {
  check({"english",
         kEnglish,
         {
             "Hello, world!",
             "The quick brown fox jumps over the lazy dog.\nIt's 3:45 p.m. (GMT+1) -- \"quoted\" [a] {b} <c> "
             "~d^e_f|g\\h`i`",
             "a",
             "tab\tseparated\ncolumns #1 @2 $3 %4 &5 *6 =7 ?8 ;9 /0",
         },
         {
             {"caf", "\xC3"},
             {"hello ", ""},
             {"", ""},
             {"hi ", " "},
             {"line", "\r"},
             {"a", "\x7F"},
             {"", " "},
             {"smart ", "\xE2"},  // ‘quotes’
             {"end\n", "\n"},
         }});
}

const char* kCProgram = R"C(#include <stdio.h>

/* sum of squares */
long sum_squares(int n) {
  long total = 0;
  for (int i = 1; i <= n; i++) {
    total += (long)i * i;  // accumulate
  }
  return total;
}

int main(int argc, char *argv[]) {
  if (argc > 1 && argv[1][0] == '-') printf("flag %s\n", argv[1]);
  else {
    int k = 10, *p = &k;
    while (*p > 0) { --*p; }
  }
  printf("%ld\n", sum_squares(4));
  return 0;
}
)C";

TEST(GbnfExamples, C) {
  check({"c",
         kC,
         {
             "int x;\n",
             "int main(void) {\n  return 0;\n}\n",
             kCProgram,
             "double avg(double a, double b) { return (a + b) / 2.0; }",
             R"(int a[3] = {1, 2, 3};
char c = '\n', *s = "hi\tthere";
static const long big = 0x7FFFul;
)",
             R"(int f(int x) {
  do { x = x > 0 ? x - 1 : 0; } while (x);
  for (;;) { if (x++ >= 10) break; else continue; }
  return x;
}
)",
             R"(void copy(char *dst, const char *src, long n) {
  while (n-- > 0) *dst++ = *src++;
  dst[0] = (char)sizeof(long);
  p->next.value += 1 << 3;
  return;
}
)",
             "// header comment\n/* block\n * comment ** */\nint g = 1 /* inline */ + 2; // trailing\n",
             "#include \"local/util.h\"\nfloat f(void){float y=1.5e-3f;return y*2;}",
         },
         {
             {"int main() { return 0; ", ""},
             {"int main() { return 0 ", "}"},
             {"int ", "2"},
             {"int x = ", ";"},
             {"", "x"},  // a statement at file scope
             {"int f() { int y = (1 + 2", ";"},
             {"int f() { if ", "x"},
             {"int f() { /* unterminated }", ""},
             {"int x = 0x", ";"},
             {"float y = 1.5e", ";"},
             {"char *s = \"abc", "\n"},
             {"int main() { return 0; } ", "}"},
             {"char", "s"},
             {"int f() { for (i = 0; i < 3", ")"},
             {"int f() { x = a + ", ";"},
             {"int x", ""},
             {"int f(int a ", "b"},
             {"void g() { else ", "{"},
             {"int a = 'a", "b"},
             {"#include <stdio.h>", ""},
             {"#include ", "s"},
             {"", ""},
         }});
}

// Where the sentence ends: json_arr ends at its closing bracket (the engine can stop there),
// json's object may still be followed by whitespace, chess ends at the result.
TEST(GbnfExamples, CompleteOnlyWhereNothingMayFollow) {
  auto arr = CompiledGrammar::compile(json_arr_grammar(), vocab().index);
  const GrammarState a = arr->advance_bytes(arr->initial(), "[1, {\"a\": []}]");
  ASSERT_NE(a, kDeadState);
  EXPECT_TRUE(arr->complete(a));
  auto obj = CompiledGrammar::compile(json_grammar(), vocab().index);
  const GrammarState o = obj->advance_bytes(obj->initial(), "{\"a\": []}");
  ASSERT_NE(o, kDeadState);
  EXPECT_TRUE(obj->accepting(o));
  EXPECT_FALSE(obj->complete(o));
  auto chess = CompiledGrammar::compile(kChess, vocab().index);
  const GrammarState c = chess->advance_bytes(chess->initial(), "1. e4 e5 1-0");
  ASSERT_NE(c, kDeadState);
  EXPECT_TRUE(chess->complete(c));
  const GrammarState c2 = chess->advance_bytes(chess->initial(), "1. e4 e5");
  EXPECT_TRUE(chess->accepting(c2));
  EXPECT_FALSE(chess->complete(c2));
}

}  // namespace
}  // namespace tandem::grammar

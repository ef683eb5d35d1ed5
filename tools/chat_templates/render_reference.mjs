// Renders every (template, case) of the conformance cases with the reference
// renderer, @huggingface/jinja, exactly as transformers.js's
// PreTrainedTokenizer.apply_chat_template renders a chat: the same choice of
// template, the same context, the same Template (trim_blocks and
// lstrip_blocks on; @huggingface/jinja always sets both).
//
//   node render_reference.mjs CASES_JSON OUTPUT_JSON
//
// Reads the tokenizer_config.json of each template's package from the
// node_modules/ next to this script (npm ci here, or the build tree's copy
// made by fetch_and_render.cmake). Writes, per (template, case), the exact
// context rendered and either `expected` (the text) or `error` (the
// reference's message: it raised, so Tandem must refuse too) or `skipped`
// (the case's own reason). tests/jinja/conformance/ compares Tandem with it.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Template } from "@huggingface/jinja";

const here = dirname(fileURLToPath(import.meta.url));
const [casesPath, outputPath] = process.argv.slice(2);
if (!casesPath || !outputPath) {
  console.error("usage: node render_reference.mjs CASES_JSON OUTPUT_JSON");
  process.exit(2);
}

function readPackageFile(name, file) {
  // node_modules directly: the packages' "exports" hide these files.
  return readFileSync(join(here, "node_modules", name, file), "utf8");
}

// transformers.js's SPECIAL_TOKEN_ATTRIBUTES, in its order.
const SPECIAL_TOKENS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"];

// A token in tokenizer_config.json is a string or an AddedToken object.
function tokenText(value) {
  if (value && typeof value === "object") return value.content ?? null;
  return value ?? null;
}

// chat_template is one string or a list of {name, template}; as
// get_chat_template: with tools "tool_use" when there is one, else "default".
function templateVariants(config) {
  const t = config.chat_template;
  if (typeof t === "string") return { default: t };
  if (!Array.isArray(t)) throw new Error("tokenizer_config.json has no chat_template");
  const variants = {};
  for (const { name, template } of t) variants[name] = template;
  return variants;
}

function chooseVariant(variants, tools) {
  if (tools !== null && "tool_use" in variants) return "tool_use";
  if ("default" in variants) return "default";
  throw new Error(`multiple chat templates and no default: ${Object.keys(variants).sort()}`);
}

const spec = JSON.parse(readFileSync(casesPath, "utf8"));
const jinjaVersion = JSON.parse(readPackageFile("@huggingface/jinja", "package.json")).version;
const templates = {};
const results = [];

for (const { name, package: pkg } of spec.templates) {
  const configText = readPackageFile(pkg, "models/tokenizer_config.json");
  const config = JSON.parse(configText);
  const variants = templateVariants(config);
  templates[name] = {
    package: pkg,
    version: JSON.parse(readPackageFile(pkg, "package.json")).version,
    tokenizer_config_sha256: createHash("sha256").update(configText).digest("hex"),
    chat_templates: variants,
  };
  const specialTokens = {};
  for (const key of SPECIAL_TOKENS) {
    const text = tokenText(config[key]);
    if (text) specialTokens[key] = text;  // as apply_chat_template: only non-empty ones
  }
  const compiled = {};
  for (const c of spec.cases) {
    const tools = c.tools ?? null;
    const variant = chooseVariant(variants, tools);
    // apply_chat_template's render() argument, key for key and in its order.
    const context = {
      messages: c.messages,
      add_generation_prompt: c.add_generation_prompt ?? false,
      tools,
      documents: c.documents ?? null,
      ...specialTokens,
      ...(spec.kwargs ?? {}),
      ...(c.kwargs ?? {}),
    };
    const result = { template: name, case: c.name, variant, context };
    const skip = c.skip?.[name];
    if (skip) {
      result.skipped = skip;
    } else {
      try {
        compiled[variant] ??= new Template(variants[variant]);
        // A deep copy: rendering must not see (or leave) anything shared.
        result.expected = compiled[variant].render(structuredClone(context));
      } catch (e) {
        result.error = String(e?.message ?? e);
      }
    }
    results.push(result);
  }
}

const output = {
  generator: "tools/chat_templates/render_reference.mjs",
  reference: `@huggingface/jinja@${jinjaVersion}`,
  cases_sha256: createHash("sha256").update(readFileSync(casesPath)).digest("hex"),
  templates,
  results,
};
// Write then rename: a reader never sees half a file.
writeFileSync(outputPath + ".tmp", JSON.stringify(output, null, 1) + "\n");
renameSync(outputPath + ".tmp", outputPath);
const count = (k) => results.filter((r) => k in r).length;
console.log(`wrote ${outputPath}: ${count("expected")} rendered, ${count("error")} raised, ${count("skipped")} skipped`);

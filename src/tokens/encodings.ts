// The encodings' tables (gpt-tokenizer's merge ranks). The package ships each as a JavaScript array
// literal of 1-2.4 MB that Node compiles whenever it is loaded; the build (scripts/build.mjs) writes
// each beside this module as JSON, which V8 reads in about half the time, and the built gateway
// loads that (docs/performance.md#start-up). Run from the sources, the package's own module is used.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

export type TokenizerName = "cl100k_base" | "o200k_base";
export const TOKENIZER_NAMES: readonly TokenizerName[] = ["cl100k_base", "o200k_base"];

export interface Encoder {
  countTokens(text: string, options: { disallowedSpecial: Set<string> }): number;
  setMergeCacheSize(size: number): void;
}

interface EncodingApi {
  getEncodingApi(name: TokenizerName, ranks: () => unknown): Encoder;
}

const require = createRequire(import.meta.url);
/** A module run from src/ (tsx, `npm run dev`, the tests): no build wrote the tables beside it. */
const FROM_SOURCES = import.meta.url.endsWith(".ts");

/** Where the build writes an encoding's tables: beside the built module. */
export const ranksFile = (name: TokenizerName) => new URL(`./${name}.ranks.json`, import.meta.url);

/** An encoding as gpt-tokenizer's `encoding/<name>` module makes it, from the tables the build wrote. */
export function loadEncoder(name: TokenizerName): Encoder {
  if (FROM_SOURCES) return require(`gpt-tokenizer/cjs/encoding/${name}`) as Encoder;
  let ranks: string;
  try {
    ranks = readFileSync(ranksFile(name), "utf8");
  } catch (err) {
    throw new Error(`the ${name} token tables ${fileURLToPath(ranksFile(name))} are missing: run \`npm run build\``, { cause: err });
  }
  const { GptEncoding } = require("gpt-tokenizer/cjs/GptEncoding") as { GptEncoding: EncodingApi };
  return GptEncoding.getEncodingApi(name, () => JSON.parse(ranks));
}

/** An encoding's tables as the build writes them: the package's, as JSON. */
export function ranksJson(name: TokenizerName): string {
  return JSON.stringify((require(`gpt-tokenizer/cjs/bpeRanks/${name}`) as { default: unknown }).default);
}

// Which model a request names (docs/configuration.md#aliases): a registered model of that name, else
// an exact alias, else the longest matching `*` glob; then the app's permission. The answer names
// the model the client asked for; the upstream is called with the resolved model's name.
import type { AppConfig } from "../config/schema.js";
import { notFound } from "../http/errors.js";

export interface Aliases {
  /** the configured model a requested name stands for; undefined when no alias matches */
  resolve(name: string): string | undefined;
  /** every alias key, for the model list */
  readonly names: string[];
}

export function createAliases(aliases: Record<string, string>): Aliases {
  const exact = new Map<string, string>();
  const globs: Array<{ matches: (name: string) => boolean; length: number; target: string }> = [];
  for (const [key, target] of Object.entries(aliases)) {
    if (!key.includes("*")) exact.set(key, target);
    else globs.push({ matches: globMatcher(key), length: key.replaceAll("*", "").length, target });
  }
  // the longest (most specific) glob first
  globs.sort((a, b) => b.length - a.length);
  return {
    resolve: (name) => exact.get(name) ?? globs.find((g) => g.matches(name))?.target,
    names: Object.keys(aliases),
  };
}

/** Whether a name matches `glob` (`*`: any characters), in time linear in the name: the text
 *  between stars is found left to right, each at its first place, which never needs a second try
 *  (a regular expression backtracks: a long name against `gpt-*-*` took seconds). */
export function globMatcher(glob: string): (name: string) => boolean {
  const parts = glob.split("*");
  const head = parts[0]!;
  const tail = parts.at(-1)!;
  const middle = parts.slice(1, -1).filter((p) => p.length > 0);
  return (name) => {
    if (name.length < head.length + tail.length || !name.startsWith(head) || !name.endsWith(tail)) return false;
    const end = name.length - tail.length;
    let at = head.length;
    for (const part of middle) {
      const found = name.indexOf(part, at);
      if (found < 0 || found + part.length > end) return false;
      at = found + part.length;
    }
    return true;
  };
}

/** What an app may use: its `models` (or only its default chat model, when it lists none). */
export function appAllows(app: AppConfig, model: string): boolean {
  return (app.models ?? [app.model]).includes(model);
}

/** What an app may use of the embedding models, its workflows' knowledge bases (docs/fleet.md#apps):
 *  its `models`, or every one when it lists none. */
export function appAllowsTool(app: AppConfig, model: string): boolean {
  return !app.models || app.models.includes(model);
}

/** What an app may use of rerank, speech and transcription models — a `requestUrl` rerank may be a
 *  paid third party (docs/fleet.md#apps): those its `models` list, none when it lists none. */
export function appAllowsListed(app: AppConfig, model: string): boolean {
  return app.models?.includes(model) === true;
}

/**
 * The model of `models` the request's `name` resolves to; 404 model_not_found when none, when the
 * app may not use it, or when no channel serves it. `allowed` says what the app may use of this kind.
 */
export function resolveModel<M>(
  models: Map<string, M>,
  aliases: Aliases,
  name: string,
  allowed: (model: string) => boolean,
  serves: (model: string) => boolean,
  what = "model",
): M {
  const resolved = models.has(name) ? name : aliases.resolve(name);
  const model = resolved === undefined ? undefined : models.get(resolved);
  if (!model || !allowed(resolved!) || !serves(resolved!)) {
    throw notFound("model_not_found", `The ${what} ${JSON.stringify(name.slice(0, 100))} does not exist or this app may not use it.`);
  }
  return model;
}

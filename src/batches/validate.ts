// Validation of a batch's input file (docs/batches.md#input-lines): every line JSON, `{custom_id,
// method: "POST", url, body}`, `url` the batch's endpoint, `custom_id` unique, no `stream: true`,
// `body.model` a model the app may use. Any bad line fails the whole batch; each is named with its
// line number (1-based; blank lines are skipped but counted).
import { hash } from "node:crypto";
import type { NewLine } from "../store/batch-types.js";

export interface LineError {
  code: string;
  message: string;
  line: number;
  param: string | null;
}

/** The most errors a failed batch lists (OpenAI's lists a few too). */
const MAX_ERRORS = 100;

/** `modelOf`: the configured model a name (as sent) stands for, if the app may use it for the endpoint. */
export function validateLines(bytes: Buffer, endpoint: string, modelOf: (model: string) => string | undefined): { lines: NewLine[]; errors: LineError[] } {
  const lines: NewLine[] = [];
  const errors: LineError[] = [];
  const seen = new Set<string>();
  const texts = bytes.toString("utf8").split("\n");
  for (let i = 0; i < texts.length && errors.length < MAX_ERRORS; i++) {
    const text = texts[i]!.trim();
    if (text === "") continue;
    const n = i + 1;
    const bad = (code: string, message: string, param: string | null = null) => void errors.push({ code, message, line: n, param });
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      bad("invalid_json_line", "This line is not valid JSON.");
      continue;
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      bad("invalid_request", "A line must be a JSON object {custom_id, method, url, body}.");
      continue;
    }
    const { custom_id: customId, method, url, body } = parsed as Record<string, unknown>;
    if (typeof customId !== "string" || customId === "") bad("missing_required_parameter", "custom_id: a non-empty string is required.", "custom_id");
    else if (seen.has(customId)) bad("duplicate_custom_id", `custom_id ${JSON.stringify(customId.slice(0, 64))} is used by an earlier line.`, "custom_id");
    else if (method !== "POST") bad("invalid_method", "method: only POST is supported.", "method");
    else if (url !== endpoint) bad("invalid_url", `url: must be the batch's endpoint ${endpoint}.`, "url");
    else if (typeof body !== "object" || body === null || Array.isArray(body)) bad("invalid_request", "body: a JSON object is required.", "body");
    else if ((body as { stream?: unknown }).stream === true) bad("invalid_request", "body.stream: streaming is not supported in a batch.", "body.stream");
    else if (typeof (body as { model?: unknown }).model !== "string") bad("missing_required_parameter", "body.model: a model name is required.", "body.model");
    else if (!modelOf((body as { model: string }).model)) bad("model_not_found", `body.model: ${JSON.stringify((body as { model: string }).model.slice(0, 100))} does not exist or this app may not use it.`, "body.model");
    else {
      seen.add(customId);
      const model = modelOf((body as { model: string }).model)!;
      lines.push({ line: n, customId, model, digest: promptDigest(model, body as Record<string, unknown>), body: JSON.stringify(body) });
    }
  }
  if (lines.length === 0 && errors.length === 0) errors.push({ code: "empty_file", message: "The input file has no lines.", line: 0, param: null });
  return { lines, errors };
}

/** sha256 of the model and the system prompt: lines sharing one are claimed together, so an engine's
 *  prefix cache serves them (docs/batches.md#idle-capacity). */
function promptDigest(model: string, body: Record<string, unknown>): string {
  const messages = Array.isArray(body.messages) ? (body.messages as Array<{ role?: unknown; content?: unknown }>) : [];
  const system = messages.find((m) => m?.role === "system" || m?.role === "developer")?.content ?? body.instructions ?? "";
  return hash("sha256", `${model}\u0000${typeof system === "string" ? system : JSON.stringify(system)}`);
}

// Responses tools → chat tools (docs/codex.md#tools). Function tools pass as they are; a `namespace`
// tool's functions are offered by their own names (its namespace prefixed only when two would clash),
// and the model's calls are named back the way the client named them. Built-in tools (web_search,
// file_search, code_interpreter, local_shell, mcp, …) are tools a private model cannot run: not offered.
import { badRequest } from "../../http/errors.js";
import type { FunctionTool, Tool, ToolChoice } from "./request-schema.js";

export interface ClientToolName {
  name: string;
  namespace?: string;
}

export interface ChatTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

export interface ToolMapping {
  tools: ChatTool[];
  /** chat function name → the client's name (and namespace) */
  toClient: Map<string, ClientToolName>;
  /** the client's `namespace\nname` (or plain name) → chat function name */
  toChat: Map<string, string>;
}

const key = (name: string, namespace?: string | null) => (namespace ? `${namespace}\n${name}` : name);

/** The chat tools offered for `tools`, and the names both ways. */
export function mapTools(tools: Tool[] | null | undefined): ToolMapping {
  const mapping: ToolMapping = { tools: [], toClient: new Map(), toChat: new Map() };
  const offer = (fn: FunctionTool, namespace?: string) => {
    const taken = mapping.toClient.has(fn.name);
    const chatName = taken && namespace ? `${namespace}__${fn.name}` : fn.name;
    if (mapping.toClient.has(chatName)) return; // the same function twice: the first one stands
    mapping.toClient.set(chatName, namespace ? { name: fn.name, namespace } : { name: fn.name });
    mapping.toChat.set(key(fn.name, namespace), chatName);
    mapping.tools.push(chatTool(chatName, fn));
  };
  // top-level functions first, so they keep their names when a namespace holds the same one
  for (const t of tools ?? []) if (isFunction(t)) offer(t);
  for (const t of tools ?? []) {
    if (t.type !== "namespace" || !("tools" in t) || !Array.isArray(t.tools)) continue;
    for (const fn of t.tools) if (isFunction(fn)) offer(fn, t.name as string);
  }
  return mapping;
}

/** The chat name of a function the client named (history items, tool_choice). */
export function chatName(mapping: ToolMapping, name: string, namespace?: string | null): string {
  return mapping.toChat.get(key(name, namespace)) ?? name;
}

/** How the client named the function the model called by `name`. */
export function clientName(mapping: ToolMapping, name: string): ClientToolName {
  return mapping.toClient.get(name) ?? { name };
}

/** The chat `tool_choice` and the tools to offer under it; `allowed_tools` narrows the offer. */
export function chatToolChoice(choice: ToolChoice | null | undefined, mapping: ToolMapping): { toolChoice?: unknown; tools: ChatTool[] } {
  const all = mapping.tools;
  if (choice == null || typeof choice === "string") return { toolChoice: choice ?? undefined, tools: all };
  if (choice.type === "function") {
    const name = chatName(mapping, choice.name ?? "", choice.namespace);
    if (!mapping.toClient.has(name)) {
      throw badRequest("invalid_request", "tool_choice.name: must name a function of tools", "tool_choice.name");
    }
    return { toolChoice: { type: "function", function: { name } }, tools: all };
  }
  if (choice.type === "allowed_tools" && choice.tools) {
    const allowed = new Set(choice.tools.flatMap((t) => (t.type === "function" && t.name ? [chatName(mapping, t.name)] : [])));
    return { toolChoice: choice.mode ?? "auto", tools: all.filter((t) => allowed.has(t.function.name)) };
  }
  // a built-in tool (web_search, …), not offered: the model chooses among what it has
  return { toolChoice: "auto", tools: all };
}

function isFunction(t: { type: string }): t is FunctionTool {
  return t.type === "function";
}

function chatTool(name: string, fn: FunctionTool): ChatTool {
  const f: ChatTool["function"] = { name };
  if (fn.description != null) f.description = fn.description;
  if (fn.parameters != null) f.parameters = fn.parameters;
  if (fn.strict != null) f.strict = fn.strict;
  return { type: "function", function: f };
}

// Responses tools → chat tools (docs/codex.md#what-sluice-reads). Function tools pass as they are; a
// `namespace` tool's functions are offered by their own names (its namespace prefixed only when two
// would clash), and the model's calls are named back the way the client named them. A freeform
// (`custom`) tool is offered as a function of one string, `input`, and its calls go back as
// custom_tool_call items. Built-in tools (web_search, file_search, code_interpreter, local_shell, mcp,
// tool_search, …) are tools a private model cannot run: not offered.
import { badRequest } from "../../http/errors.js";
import type { CustomTool, FunctionTool, Tool, ToolChoice } from "./request-schema.js";

export interface ClientToolName {
  name: string;
  namespace?: string;
  /** a freeform tool: the call's `input` is the function's `input` argument */
  custom?: true;
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
  const offer = (fn: FunctionTool | CustomTool, namespace?: string) => {
    const taken = mapping.toClient.has(fn.name);
    const chatName = taken && namespace ? `${namespace}__${fn.name}` : fn.name;
    if (mapping.toClient.has(chatName)) return; // the same function twice: the first one stands
    const client: ClientToolName = { name: fn.name };
    if (namespace) client.namespace = namespace;
    if (fn.type === "custom") client.custom = true;
    mapping.toClient.set(chatName, client);
    mapping.toChat.set(key(fn.name, namespace), chatName);
    mapping.tools.push(fn.type === "custom" ? customChatTool(chatName, fn) : chatTool(chatName, fn));
  };
  // top-level tools first, so they keep their names when a namespace holds the same one
  for (const t of tools ?? []) if (isOffered(t)) offer(t);
  for (const t of tools ?? []) {
    if (t.type !== "namespace" || !("tools" in t) || !Array.isArray(t.tools)) continue;
    for (const fn of t.tools) if (isOffered(fn)) offer(fn, t.name as string);
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
  if (choice.type === "function" || choice.type === "custom") {
    const name = chatName(mapping, choice.name ?? "", choice.namespace);
    if (!mapping.toClient.has(name)) {
      throw badRequest("invalid_request", "tool_choice.name: must name a function of tools", "tool_choice.name");
    }
    return { toolChoice: { type: "function", function: { name } }, tools: all };
  }
  if (choice.type === "allowed_tools" && choice.tools) {
    const allowed = new Set(choice.tools.flatMap((t) => ((t.type === "function" || t.type === "custom") && t.name ? [chatName(mapping, t.name)] : [])));
    return { toolChoice: choice.mode ?? "auto", tools: all.filter((t) => allowed.has(t.function.name)) };
  }
  // a built-in tool (web_search, …), not offered: the model chooses among what it has
  return { toolChoice: "auto", tools: all };
}

function isOffered(t: { type: string }): t is FunctionTool | CustomTool {
  return t.type === "function" || t.type === "custom";
}

function chatTool(name: string, fn: FunctionTool): ChatTool {
  const f: ChatTool["function"] = { name };
  if (fn.description != null) f.description = fn.description;
  if (fn.parameters != null) f.parameters = fn.parameters;
  if (fn.strict != null) f.strict = fn.strict;
  return { type: "function", function: f };
}

/** A freeform tool as a function of one string; its grammar, if any, told in the description. */
function customChatTool(name: string, tool: CustomTool): ChatTool {
  const grammar = tool.format?.type === "grammar" && tool.format.definition ? `\n\nThe input follows this ${tool.format.syntax ?? ""} grammar:\n${tool.format.definition}` : "";
  const description = `${tool.description ?? ""}${grammar}\n\nCall it with the whole input, as text, in the \`input\` argument.`.trim();
  const parameters = { type: "object", properties: { input: { type: "string", description: "The tool's input." } }, required: ["input"], additionalProperties: false };
  return { type: "function", function: { name, description, parameters } };
}

/** The freeform input of a custom tool's call: the function's `input` argument (the text as it is when not that). */
export function customInput(args: string): string {
  try {
    const parsed = JSON.parse(args) as unknown;
    if (parsed && typeof parsed === "object" && typeof (parsed as { input?: unknown }).input === "string") return (parsed as { input: string }).input;
  } catch {
    // a model that wrote the input itself, not as JSON
  }
  return args;
}

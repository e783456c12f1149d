// The completion report (FastGPT chat-node response item, docs/api.md#completion-report): returned with `detail`,
// streamed as `flowResponses`, and sent to share-link operators in the finish callback.
import type { ModelConfig } from "../config/schema.js";
import { lastUserText, messageText } from "../tokens/counter.js";
import type { ChatMessage } from "./request-schema.js";

export interface HistoryItem {
  obj: "System" | "Human" | "AI";
  value: string;
}

export interface ReportItem {
  moduleType: "chatNode";
  moduleName: string;
  runningTime: number;
  query: string;
  textOutput: string;
  tokens: number;
  inputTokens: number;
  outputTokens: number;
  model: string;
  contextTotalLen: number;
  totalPoints: number;
  /** null when neither the request nor the app set one: the model server's own default applied */
  temperature: number | null;
  maxToken: number;
  historyPreview: HistoryItem[];
  finishReason: string;
}

export interface ReportInput {
  model: ModelConfig;
  messages: ChatMessage[];
  textOutput: string;
  inputTokens: number;
  outputTokens: number;
  points: number;
  temperature: number | undefined;
  maxTokens: number;
  finishReason: string;
  runningTimeMs: number;
}

export function buildReport(r: ReportInput): ReportItem {
  return {
    moduleType: "chatNode",
    moduleName: "AI Chat",
    runningTime: Math.round(r.runningTimeMs) / 1000,
    query: lastUserText(r.messages),
    textOutput: r.textOutput,
    tokens: r.inputTokens + r.outputTokens,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    model: r.model.name ?? r.model.model,
    contextTotalLen: r.messages.length,
    totalPoints: r.points,
    temperature: r.temperature ?? null,
    maxToken: r.maxTokens,
    historyPreview: historyPreview(r.messages),
    finishReason: r.finishReason,
  };
}

const PREVIEW_KEEP = 50;

function historyObj(role: ChatMessage["role"]): HistoryItem["obj"] {
  if (role === "system" || role === "developer") return "System";
  return role === "user" ? "Human" : "AI";
}

/** First system message and the last two messages whole; any other value over 100 chars is cut. */
export function historyPreview(messages: ChatMessage[]): HistoryItem[] {
  const firstSystem = messages.findIndex((m) => m.role === "system");
  const wholeFrom = messages.length - 2;
  return messages.map((m, i) => {
    const value = messageText(m.content);
    const whole = i === firstSystem || i >= wholeFrom || value.length <= 2 * PREVIEW_KEEP;
    return {
      obj: historyObj(m.role),
      value: whole
        ? value
        : `${value.slice(0, PREVIEW_KEEP)}\n\n...[hide ${value.length - 2 * PREVIEW_KEEP} chars]...\n\n${value.slice(-PREVIEW_KEEP)}`,
    };
  });
}

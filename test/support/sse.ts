// Reads a streamed response as SSE frames, for tests.

export interface SseFrame {
  event?: string;
  data: string;
}

export function parseSse(text: string): SseFrame[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim().length > 0)
    .map((block) => {
      const frame: SseFrame = { data: "" };
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) frame.event = line.slice(7);
        else if (line.startsWith("data: ")) frame.data += line.slice(6);
      }
      return frame;
    });
}

/** Reads from a response body until `predicate` holds for the text so far; returns that text. */
export async function readUntil(res: Response, predicate: (text: string) => boolean): Promise<{ text: string; reader: ReadableStreamDefaultReader<Uint8Array> }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!predicate(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return { text, reader };
}

// Reads Responses SSE text the way the official openai SDK does: its SSE parser (Stream.fromSSEResponse)
// and its event accumulator (ResponseStream), which throws on an event it does not know, an index
// that points at no item, or a stream that does not start with response.created.
import { ResponseStream } from "openai/lib/responses/ResponseStream";
import type { Response as SdkResponse, ResponseStreamEvent } from "openai/resources/responses/responses";
import { Stream } from "openai/streaming";

export interface SdkRead {
  events: ResponseStreamEvent[];
  /** the accumulated response (ResponseStream.finalResponse) */
  final: SdkResponse;
}

/** The events and the accumulated response; rejects as the SDK does (an `error` event rejects its stream). */
export async function readWithSdk(sse: string): Promise<SdkRead> {
  const { events, final, error } = await readWithSdkSettled(sse);
  if (error) throw error;
  return { events, final: final! };
}

/** The events seen before the stream ended or failed, and how it ended. */
export async function readWithSdkSettled(sse: string): Promise<{ events: ResponseStreamEvent[]; final?: SdkResponse; error?: Error }> {
  const controller = new AbortController();
  const stream = Stream.fromSSEResponse<ResponseStreamEvent>(new Response(sse), controller);
  const runner = ResponseStream.fromReadableStream(stream.toReadableStream());
  const events: ResponseStreamEvent[] = [];
  runner.on("event", (e) => events.push(e));
  try {
    return { events, final: await runner.finalResponse() };
  } catch (error) {
    return { events, error: error as Error };
  }
}

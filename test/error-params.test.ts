// Wrong request bodies (chat completions and the share-link API): the 400's `param` names the field,
// as `messages[2].content`, and its message says what the field should be in a client developer's
// words, without echoing what was sent.
import { describe, expect, it } from "vitest";
import { useGateway } from "./support/harness.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";

const h = useGateway((url) => coreConfig(url, { shareLinks: [{ shareId: "open", appId: "a1" }] }));
const u = userMessage("x");

async function expectInvalid(res: Response, param: string | null, message: string) {
  expect(res.status).toBe(400);
  const { error } = await res.json();
  expect(error).toEqual({ type: "invalid_request_error", code: "invalid_request", param, message });
}

describe("chat completions", () => {
  const cases: Array<[body: unknown, param: string | null, message: string]> = [
    [[1, 2], null, "Request body must be a JSON object, got an array."],
    [{ model: "m1" }, "messages", "messages is required"],
    [{ messages: [] }, "messages", "messages: must hold at least one item"],
    [{ messages: "hi" }, "messages", "messages: expected an array, got a string"],
    [{ messages: ["hi"] }, "messages[0]", "messages[0]: expected an object, got a string"],
    [{ messages: [{ content: "x" }] }, "messages[0].role", "messages[0].role is required"],
    [{ messages: [{ role: "wizard", content: "x" }] }, "messages[0].role", 'messages[0].role: must be one of "system", "developer", "user", "assistant", "tool", "function"'],
    [{ messages: [u, u, { role: "user", content: 42 }] }, "messages[2].content", "messages[2].content: expected a string, an array or null, got a number"],
    [{ messages: [{ role: "user", content: [{ type: "video" }] }] }, "messages[0].content[0].type", 'messages[0].content[0].type: must be one of "text", "image_url", "input_audio", "file", "refusal", "file_url"'],
    [{ messages: [{ role: "user", content: [{ text: "hi" }] }] }, "messages[0].content[0].type", "messages[0].content[0].type is required"],
    [{ messages: [{ role: "user", content: [{ type: "text", text: 5 }] }] }, "messages[0].content[0].text", "messages[0].content[0].text: expected a string, got a number"],
    [{ messages: [{ role: "user", content: [{ type: "image_url", image_url: 5 }] }] }, "messages[0].content[0].image_url", "messages[0].content[0].image_url: expected a string or an object, got a number"],
    [{ messages: [{ role: "user", content: [{ type: "image_url", image_url: {} }] }] }, "messages[0].content[0].image_url.url", "messages[0].content[0].image_url.url is required"],
    [{ messages: [u], temperature: "hot" }, "temperature", "temperature: expected a number, got a string"],
    [{ messages: [u], max_tokens: 1.5 }, "max_tokens", "max_tokens: expected an integer, got 1.5"],
    [{ messages: [u], max_tokens: 0 }, "max_tokens", "max_tokens: must be greater than 0"],
    [{ messages: [u], stream: "yes" }, "stream", "stream: expected true or false, got a string"],
    [{ messages: [u], stream_options: { include_usage: 1 } }, "stream_options.include_usage", "stream_options.include_usage: expected true or false, got a number"],
    [{ messages: [u], model: "" }, "model", "model: must not be empty"],
    [{ messages: [u], chatId: 7 }, "chatId", "chatId: expected a string, got a number"],
    [{ messages: [u], chatId: "c".repeat(251) }, "chatId", "chatId: must be at most 250 characters"],
    [{ messages: [u], variables: ["a"] }, "variables", "variables: expected an object, got an array"],
  ];

  it.each(cases)("%j → param %s", async (body, param, message) => {
    await expectInvalid(await chat(h.gw.url, body), param, message);
  });
});

describe("share-link API", () => {
  const post = (path: string, body: unknown) =>
    fetch(`${h.gw.url}/api/share/${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  it("names the field and what it should be, for init, chats and chat", async () => {
    await expectInvalid(await post("init", { shareId: 5, outLinkUid: "u" }), "shareId", "shareId: expected a string, got a number");
    await expectInvalid(await post("chats", { shareId: "open" }), "outLinkUid", "outLinkUid is required");
    await expectInvalid(await post("chat", { shareId: "open", outLinkUid: "u", chatId: "" }), "chatId", "chatId: must not be empty");
    await expectInvalid(await post("init", "just a string"), null, "Request body must be a JSON object, got a string.");
  });

  it("never echoes a token it refuses", async () => {
    const token = `tok-${"s".repeat(5000)}`;
    const res = await post("init", { shareId: "open", outLinkUid: token });
    const text = await res.text();
    expect(res.status).toBe(400);
    expect(JSON.parse(text).error).toMatchObject({ param: "outLinkUid", message: "outLinkUid: must be at most 4096 characters" });
    expect(text).not.toContain("sss");
  });
});

// The Store contract's conversations (see store-contract.ts): rounds and their history, titles,
// variables, ownership through openChat and appendRound, the byte bound, share-link chat lists.
import { describe, expect, it } from "vitest";
import type { ChatOwner, Store } from "../../src/store/types.js";
import { DAY, T0, alice, chatOf, contents, history, round, web } from "./store-rows.js";

const bob = { shareId: "public", uid: "bob" };
const other = { keyName: "other" };
const open = (store: Store, who: ChatOwner | null, chatId = "c1", over: { limit?: number; maxBytes?: number; create?: boolean } = {}) =>
  store.openChat("support", chatId, who, { limit: 100, maxBytes: Number.POSITIVE_INFINITY, create: false, ...over });

export function describeChatContract(current: () => Store): void {
  describe("conversations", () => {
    it("keeps a three-round history in order, oldest first", async () => {
      const store = current();
      for (const user of ["one", "two", "three"]) expect(await store.appendRound(round({ user }))).toBe(true);
      const messages = await history(store, "support", "c1");
      expect(contents(messages)).toEqual([
        "user:one", "assistant:re: one", "user:two", "assistant:re: two", "user:three", "assistant:re: three",
      ]);
      expect(messages[0]!.createdAt).toBe(T0);
    });

    it("reads only the last `limit` messages, still oldest first; missing for no chat", async () => {
      const store = current();
      expect(await open(store, web)).toEqual({ status: "missing" });
      for (const user of ["one", "two", "three"]) await store.appendRound(round({ user, variables: { n: user } }));
      const all = await history(store, "support", "c1");
      for (const limit of [0, 1, 2, 3, 4, 6, 7, 100, 2.9, -1, Number.NaN]) {
        const count = Math.floor(limit) > 0 ? Math.floor(limit) : 0;
        expect(await open(store, web, "c1", { limit })).toEqual({
          status: "owned", chat: { chatId: "c1", owner: web, title: "one", updatedAt: T0, variables: { n: "three" } }, messages: count > 0 ? all.slice(-count) : [],
        });
      }
      expect((await history(store, "support", "c1", 3)).map((m) => m.content)).toEqual(["re: two", "three", "re: three"]);
      expect(await store.openChat("other-app", "c1", web, { limit: 4, maxBytes: 100, create: false })).toEqual({ status: "missing" });
    });

    it("keeps chats apart, and the same chatId under two apps is two chats", async () => {
      const store = current();
      await store.appendRound(round({ user: "in c1" }));
      await store.appendRound(round({ chatId: "c2", user: "in c2" }));
      await store.appendRound(round({ appId: "sales", user: "sales c1" }));
      const of = async (appId: string, chatId: string) => (await history(store, appId, chatId)).map((m) => m.content);
      expect(await of("support", "c1")).toEqual(["in c1", "re: in c1"]);
      expect(await of("support", "c2")).toEqual(["in c2", "re: in c2"]);
      expect(await of("sales", "c1")).toEqual(["sales c1", "re: sales c1"]);
      expect((await chatOf(store, "sales", "c1"))?.title).toBe("sales c1");
    });

    it("titles a chat with its first user turn, whitespace collapsed, at most 60 characters", async () => {
      const store = current();
      await store.appendRound(round({ user: `  hello \n\t world ${"x".repeat(100)}` }));
      await store.appendRound(round({ user: "a later question" }));
      const chat = await chatOf(store, "support", "c1");
      expect(chat?.title).toBe(`hello world ${"x".repeat(48)}`);
      expect(chat?.title).toHaveLength(60);
      await store.appendRound(round({ chatId: "emoji", user: "😀".repeat(70) }));
      expect((await chatOf(store, "support", "emoji"))?.title).toBe("😀".repeat(60));
    });

    it("returns the owner, title and updatedAt of a chat; missing for none", async () => {
      const store = current();
      await store.appendRound(round({ chatId: "s1", owner: alice, user: "hi", at: T0 }));
      await store.appendRound(round({ chatId: "s1", owner: alice, user: "again", at: T0 + 5 }));
      await store.appendRound(round({ chatId: "k1", user: "by key" }));
      expect(await chatOf(store, "support", "s1")).toEqual({ chatId: "s1", owner: alice, title: "hi", updatedAt: T0 + 5 });
      expect((await chatOf(store, "support", "k1"))?.owner).toEqual(web);
      expect(await chatOf(store, "support", "missing")).toBeUndefined();
    });

    it("never moves updatedAt back", async () => {
      const store = current();
      await store.appendRound(round({ chatId: "s1", owner: alice, user: "late", at: T0 + 100 }));
      await store.appendRound(round({ chatId: "s1", owner: alice, user: "early", at: T0 }));
      expect(await chatOf(store, "support", "s1")).toEqual({ chatId: "s1", owner: alice, title: "late", updatedAt: T0 + 100 });
      expect((await history(store, "support", "s1", 4)).map((m) => m.createdAt)).toEqual([T0 + 100, T0 + 100, T0, T0]);
    });

    it("loses no turn when 50 rounds are appended to one chat at once", async () => {
      const store = current();
      const users = Array.from({ length: 50 }, (_, i) => `q${i}`);
      expect(await Promise.all(users.map((user) => store.appendRound(round({ user }))))).toEqual(users.map(() => true));
      const messages = await history(store, "support", "c1");
      expect(messages).toHaveLength(100);
      // each round stays whole: its answer follows its question
      for (let i = 0; i < 100; i += 2) expect(messages[i + 1]!.content).toBe(`re: ${messages[i]!.content}`);
      expect(new Set(messages.filter((m) => m.role === "user").map((m) => m.content))).toEqual(new Set(users));
    });

    it("keeps a chat's variables as given (key order too), replaced only by a round that gives them", async () => {
      const store = current();
      await store.appendRound(round({ user: "no vars" }));
      expect(await chatOf(store, "support", "c1")).not.toHaveProperty("variables");
      await store.appendRound(round({ user: "vars", variables: { zeta: "z", alpha: 1, nested: { b: [1, "x"], a: null } } }));
      await store.appendRound(round({ user: "keeps them" }));
      const kept = (await chatOf(store, "support", "c1"))?.variables;
      expect(kept).toEqual({ zeta: "z", alpha: 1, nested: { b: [1, "x"], a: null } });
      expect(Object.keys(kept!)).toEqual(["zeta", "alpha", "nested"]);
      await store.appendRound(round({ user: "replaces", variables: { only: true } }));
      expect((await chatOf(store, "support", "c1"))?.variables).toEqual({ only: true });
      await store.appendRound(round({ chatId: "fresh", user: "first", variables: {} }));
      expect((await chatOf(store, "support", "fresh"))?.variables).toEqual({});
    });

    it("reads back every text as written: NUL, U+FFFF, emoji, and lone surrogates as SQLite keeps them", async () => {
      const store = current();
      const odd = "a\u0000b\uffffc\uffff0d😀e";
      const owner = { shareId: "public", uid: odd };
      await store.appendRound(round({ chatId: odd, owner, user: odd, assistant: `${odd}\u0000`, variables: { [odd]: odd } }));
      expect(await store.openChat("support", odd, owner, { limit: 2, maxBytes: Number.POSITIVE_INFINITY, create: false })).toEqual({
        status: "owned",
        chat: { chatId: odd, owner, title: odd, updatedAt: T0, variables: { [odd]: odd } },
        messages: [{ role: "user", content: odd, createdAt: T0 }, { role: "assistant", content: `${odd}\u0000`, createdAt: T0 }],
      });
      expect(await store.listChats(owner, { since: 0, limit: 5 })).toEqual([{ chatId: odd, title: odd, updatedAt: T0 }]);
      await store.appendRound(round({ chatId: "lone", user: "x\ud800y\udc00z", assistant: "ok" }));
      expect((await history(store, "support", "lone", 2))[0]!.content).toBe("x\ufffd\ufffd\ufffdy\ufffd\ufffd\ufffdz");
    });
  });

  describe("history after rounds were added", () => {
    it("sees every committed round after the history was read once, also past 64 messages", async () => {
      const store = current();
      expect(await chatOf(store, "support", "long")).toBeUndefined();
      expect(await history(store, "support", "long", 12)).toEqual([]);
      for (let i = 0; i < 40; i++) await store.appendRound(round({ chatId: "long", user: `u${i}`, assistant: `a${i}`, at: T0 + i }));
      expect((await chatOf(store, "support", "long"))?.updatedAt).toBe(T0 + 39);
      const last12 = await history(store, "support", "long", 12);
      expect(last12.map((m) => m.content)).toEqual(Array.from({ length: 6 }, (_, i) => [`u${34 + i}`, `a${34 + i}`]).flat());
      const all = await history(store, "support", "long", 200);
      expect(all).toHaveLength(80);
      expect(all[0]!.content).toBe("u0");
    });

    it("reads the same history in short and long reads after concurrent rounds", async () => {
      const store = current();
      await store.appendRound(round({ chatId: "busy", user: "first", assistant: "answer" }));
      await history(store, "support", "busy", 12);
      await Promise.all(Array.from({ length: 30 }, (_, i) => store.appendRound(round({ chatId: "busy", user: `q${i}`, assistant: `r${i}`, at: T0 }))));
      const short = await history(store, "support", "busy", 60);
      const long = (await history(store, "support", "busy", 200)).slice(-60);
      expect(short).toHaveLength(60);
      expect(short).toEqual(long);
      for (let i = 0; i < 60; i += 2) expect(short[i + 1]!.content).toBe(short[i]!.content.replace("q", "r"));
    });
  });

  describe("the byte bound", () => {
    it("keeps the newest whole rounds within maxBytes of UTF-8 content, never an answer without its question", async () => {
      const store = current();
      // UTF-8: a user turn of 5 bytes and an answer of 3 per round
      for (let i = 0; i < 4; i++) await store.appendRound(round({ user: `${i}😀`, assistant: `${i}é`, at: T0 + i }));
      const read = async (limit: number, maxBytes: number) => {
        const opened = await open(store, web, "c1", { limit, maxBytes });
        return opened.status === "owned" ? opened.messages.map((m) => m.content) : opened.status;
      };
      expect(await read(100, 32)).toEqual(["0😀", "0é", "1😀", "1é", "2😀", "2é", "3😀", "3é"]);
      expect(await read(100, 31)).toEqual(["1😀", "1é", "2😀", "2é", "3😀", "3é"]);
      expect(await read(100, 16)).toEqual(["2😀", "2é", "3😀", "3é"]);
      expect(await read(100, 15)).toEqual(["3😀", "3é"]);
      expect(await read(100, 8)).toEqual(["3😀", "3é"]);
      expect(await read(100, 7)).toEqual([]);
      expect(await read(100, 0)).toEqual([]);
      // the count cuts messages as before (an odd limit keeps the oldest round's answer), the bytes whole rounds
      expect(await read(3, 11)).toEqual(["2é", "3😀", "3é"]);
      expect(await read(3, 10)).toEqual(["3😀", "3é"]);
      expect(await read(4, Number.POSITIVE_INFINITY)).toEqual(["2😀", "2é", "3😀", "3é"]);
    });

    it("counts the bytes of the text as read back (NUL is one byte), past a huge older round", async () => {
      const store = current();
      await store.appendRound(round({ user: "big", assistant: "x".repeat(200_000) }));
      for (let i = 0; i < 3; i++) await store.appendRound(round({ user: `q${i}`, assistant: "\u0000\u0000" }));
      const opened = await open(store, web, "c1", { limit: 1000, maxBytes: 100_000 });
      expect(opened.status === "owned" && contents(opened.messages)).toEqual(["user:q0", "assistant:\u0000\u0000", "user:q1", "assistant:\u0000\u0000", "user:q2", "assistant:\u0000\u0000"]);
      // NUL is one byte of UTF-8 (stored longer on PostgreSQL): the bound counts what is read back
      const tight = await open(store, web, "c1", { limit: 1000, maxBytes: 8 });
      expect(tight.status === "owned" && tight.messages.map((m) => m.content)).toEqual(["q1", "\u0000\u0000", "q2", "\u0000\u0000"]);
    });
  });

  describe("ownership", () => {
    it("lets a key's chat be read by that key only, and by an app that shares its chats", async () => {
      const store = current();
      await store.appendRound(round({ user: "mine" }));
      expect(await open(store, web)).toMatchObject({ status: "owned", chat: { owner: web } });
      expect(await open(store, null)).toMatchObject({ status: "owned", messages: [{ content: "mine" }, { content: "re: mine" }] });
      // a refusal carries nothing of the chat
      expect(await open(store, other)).toEqual({ status: "not_owned" });
      expect(await open(store, alice)).toEqual({ status: "not_owned" });
    });

    it("lets a share-link user's chat be read by that user only: not another uid, link or key", async () => {
      const store = current();
      await store.appendRound(round({ owner: alice, user: "hers" }));
      expect(await open(store, alice)).toMatchObject({ status: "owned", chat: { owner: alice } });
      for (const who of [bob, { shareId: "vip", uid: "alice" }, web, { keyName: "alice" }]) expect(await open(store, who)).toEqual({ status: "not_owned" });
    });

    it("refuses a round into another's chat (false, nothing written); a shared app writes into any, keeping the owner", async () => {
      const store = current();
      await store.appendRound(round({ owner: alice, user: "hers", at: T0 }));
      expect(await store.appendRound(round({ owner: bob, user: "intruder", at: T0 + 1, variables: { x: 1 } }))).toBe(false);
      expect(await store.appendRound(round({ owner: web, user: "a key", at: T0 + 2 }))).toBe(false);
      expect(await chatOf(store, "support", "c1")).toEqual({ chatId: "c1", owner: alice, title: "hers", updatedAt: T0 });
      expect(contents(await history(store, "support", "c1"))).toEqual(["user:hers", "assistant:re: hers"]);
      expect(await store.appendRound(round({ owner: web, shared: true, user: "shared app", at: T0 + 3 }))).toBe(true);
      expect(await chatOf(store, "support", "c1")).toEqual({ chatId: "c1", owner: alice, title: "hers", updatedAt: T0 + 3 });
      expect((await history(store, "support", "c1")).map((m) => m.content)).toEqual(["hers", "re: hers", "shared app", "re: shared app"]);
    });

    it("creates a missing chat owned by the caller, unlisted and untitled until its first round", async () => {
      const store = current();
      const created = await open(store, alice, "new", { create: true });
      expect(created).toEqual({ status: "owned", chat: { chatId: "new", owner: alice, title: "", updatedAt: 0 }, messages: [] });
      expect(await open(store, alice, "new", { create: true })).toEqual(created);
      expect(await open(store, bob, "new", { create: true })).toEqual({ status: "not_owned" });
      expect(await store.listChats(alice, { since: 0, limit: 20 })).toEqual([]);
      expect(await store.appendRound(round({ chatId: "new", owner: bob, user: "not his" }))).toBe(false);
      expect(await store.appendRound(round({ chatId: "new", owner: alice, user: "first words", at: T0 + 7 }))).toBe(true);
      expect(await store.appendRound(round({ chatId: "new", owner: alice, user: "second", at: T0 + 8 }))).toBe(true);
      expect(await open(store, alice, "new")).toMatchObject({ status: "owned", chat: { title: "first words", updatedAt: T0 + 8 } });
      expect(await store.listChats(alice, { since: 0, limit: 20 })).toEqual([{ chatId: "new", title: "first words", updatedAt: T0 + 8 }]);
      expect(await open(store, web, "missing")).toEqual({ status: "missing" });
    });

    it("makes a chat opened by a shared app (who null) nobody's: any key of the app uses it, no share-link user", async () => {
      const store = current();
      expect(await open(store, null, "common", { create: true })).toMatchObject({ status: "owned", chat: { owner: null } });
      expect(await store.appendRound(round({ chatId: "common", owner: web, user: "from web" }))).toBe(true);
      expect(await store.appendRound(round({ chatId: "common", owner: other, user: "from other" }))).toBe(true);
      expect(await store.appendRound(round({ chatId: "common", owner: alice, user: "from alice" }))).toBe(false);
      expect(await open(store, other, "common")).toMatchObject({ status: "owned", chat: { owner: null, title: "from web" }, messages: { length: 4 } });
      expect(await open(store, alice, "common")).toEqual({ status: "not_owned" });
    });

    it("gives a new chat to exactly one of many concurrent creators", async () => {
      const store = current();
      const whos: ChatOwner[] = Array.from({ length: 40 }, (_, i) => (i % 2 ? { keyName: `k${i}` } : { shareId: "public", uid: `u${i}` }));
      const opened = await Promise.all(whos.map((who) => open(store, who, "race", { create: true })));
      const owners = opened.flatMap((o, i) => (o.status === "owned" ? [whos[i]] : []));
      expect(owners).toHaveLength(1);
      expect(opened.filter((o) => o.status === "not_owned")).toHaveLength(39);
      expect((await chatOf(store, "support", "race"))?.owner).toEqual(owners[0]);

      const written = await Promise.all(whos.map((owner, i) => store.appendRound(round({ chatId: "append-race", owner, user: `q${i}` }))));
      expect(written.filter(Boolean)).toHaveLength(1);
      const winner = written.indexOf(true);
      expect(contents(await history(store, "support", "append-race"))).toEqual([`user:q${winner}`, `assistant:re: q${winner}`]);
      expect((await chatOf(store, "support", "append-race"))?.owner).toEqual(whos[winner]);
    });

    it("writes the rounds of a chat's owner and refuses the others' when they come together", async () => {
      const store = current();
      const rounds = [web, other, web, other, web].map((owner, i) => round({ chatId: "mixed", owner, user: `q${i}`, at: T0 + i }));
      expect(await Promise.all(rounds.map((r) => store.appendRound(r)))).toEqual([true, false, true, false, true]);
      expect((await history(store, "support", "mixed")).filter((m) => m.role === "user").map((m) => m.content)).toEqual(["q0", "q2", "q4"]);
    });
  });

  describe("share-link chat lists", () => {
    it("lists at most 20 chats updated since the cut-off, newest first, for that user only", async () => {
      const store = current();
      const now = T0 + 60 * DAY;
      for (let i = 0; i < 25; i++) await store.appendRound(round({ chatId: `new${i}`, owner: alice, user: `q${i}`, at: now - i * 1000 }));
      await store.appendRound(round({ chatId: "old", owner: alice, user: "old", at: now - 31 * DAY }));
      await store.appendRound(round({ chatId: "bob", owner: bob, user: "b", at: now }));
      await store.appendRound(round({ chatId: "other-link", owner: { shareId: "vip", uid: "alice" }, user: "v", at: now }));
      await store.appendRound(round({ chatId: "by-key", user: "k", at: now }));

      const chats = await store.listChats(alice, { since: now - 30 * DAY, limit: 20 });
      expect(chats.map((c) => c.chatId)).toEqual(Array.from({ length: 20 }, (_, i) => `new${i}`));
      expect(chats[0]).toEqual({ chatId: "new0", title: "q0", updatedAt: now });
      const all = await store.listChats(alice, { since: now - 30 * DAY, limit: 100 });
      expect(all).toHaveLength(25);
      expect(all.map((c) => c.chatId)).not.toContain("old");
      expect(await store.listChats(alice, { since: now - 30 * DAY, limit: 0 })).toEqual([]);
      // the cut-off is inclusive, also when it is not a whole millisecond
      expect((await store.listChats(alice, { since: now - 24_000 + 0.5, limit: 100 })).map((c) => c.chatId)).toEqual(
        Array.from({ length: 24 }, (_, i) => `new${i}`),
      );
    });

    it("moves a chat to the top when a round is added; equal times list the newer chat first", async () => {
      const store = current();
      await store.appendRound(round({ chatId: "a", owner: alice, user: "a", at: T0 }));
      await store.appendRound(round({ chatId: "b", owner: alice, user: "b", at: T0 + 1 }));
      await store.appendRound(round({ chatId: "a", owner: alice, user: "a2", at: T0 + 2 }));
      expect((await store.listChats(alice, { since: 0, limit: 20 })).map((c) => c.chatId)).toEqual(["a", "b"]);
      await store.appendRound(round({ chatId: "c", owner: alice, user: "c", at: T0 + 2 }));
      await store.appendRound(round({ chatId: "d", owner: alice, user: "d", at: T0 + 2 }));
      expect((await store.listChats(alice, { since: 0, limit: 20 })).map((c) => c.chatId)).toEqual(["d", "c", "a", "b"]);
    });
  });
}

// aiproxy's channel API as FastGPT calls it (docs/fastgpt.md#channels): the channel table, one
// channel, the protocol list, status changes and writes. A write is checked with the whole config as
// a reload is, stored, and applied like one: this instance serves it at once, the others once the
// notice reaches them; nothing is stored when the check fails.
import type { H3Event } from "h3";
import type { Keyring } from "../auth/keys.js";
import { configSchema, type ChannelConfig, type Config } from "../config/schema.js";
import { GatewayError } from "../http/errors.js";
import type { ChannelWriteOp, Observer } from "../observability/observer.js";
import type { AddressGuard } from "../upstream/address-guard.js";
import type { ChannelRouter } from "../upstream/router.js";
import { DISABLED, ENABLED, toRecord, type ChannelBook, type ChannelMeta, type EffectiveChannels } from "../upstream/channel-book.js";
import { channelFrom, readChannelBody } from "./channel-input.js";
import { channelView, TYPE_METAS, type AiproxyChannel } from "./channel-view.js";
import { invalid, ok, recordNotFound } from "./envelope.js";
import { z } from "zod";
import { describeIssue } from "../json/issues.js";

export interface ChannelRouteDeps {
  keyring: Keyring;
  router: ChannelRouter;
  book: ChannelBook;
  /** config.json as last loaded (the book's records go over its channels) */
  file: Config;
  /** what the runtime serves: config.json's channels with the store's over them */
  channels: EffectiveChannels;
  writable: boolean;
  readJson: (event: H3Event) => Promise<unknown>;
  /** builds the runtime again over the store's channels, on this instance */
  rebuild: () => void;
  /** every model of the config, whatever its kind */
  configured: (model: string) => boolean;
  /** where a channel may point (docs/fastgpt.md#channel-writes): no link-local or metadata address */
  guard: Pick<AddressGuard, "refusal">;
  observer: Observer;
}

/** One write at a time on this instance: each is checked against the channels the last one left. */
let writing: Promise<unknown> = Promise.resolve();

export function createChannelRoutes(deps: ChannelRouteDeps) {
  /** channel writes on (the caller's admin key: the route table's, src/routes.ts) */
  const writer = () => {
    if (!deps.writable) throw new GatewayError(403, "channel_writes_off", "channel writes are off (channelWrites: false in config.json)");
  };

  function views(): AiproxyChannel[] {
    return deps.channels.channels
      .map((c) => viewOf(c, deps.channels.meta.get(c.name)))
      .filter((v): v is AiproxyChannel => v !== undefined)
      .sort((a, b) => a.id - b.id);
  }
  function viewOf(channel: ChannelConfig, meta: ChannelMeta | undefined): AiproxyChannel | undefined {
    if (!meta) return undefined;
    const entry = deps.router.entries.find((e) => e.config.name === channel.name);
    const breaker = entry ? deps.router.breaker(entry).phase : "closed";
    return channelView(channel, meta, { up: entry?.up === true, breaker, accessedAt: entry?.accessedAt ?? 0, lastErrorAt: entry?.lastError?.at ?? 0 });
  }

  /** The effective channel numbered `id` (a path's), or 404 record not found. */
  function channelOf(raw: string | undefined): { channel: ChannelConfig; meta: ChannelMeta } {
    const id = idOf(raw);
    const channel = deps.channels.channels.find((c) => c.id === id);
    const meta = channel && deps.channels.meta.get(channel.name);
    if (!channel || !meta) throw recordNotFound(`channel ${id}`);
    return { channel, meta };
  }

  /** Checks the channels a write leaves with the whole config (as a reload does, a model left
   *  without a channel aside), then stores and applies them. */
  function commit(next: ChannelConfig[], store: () => Promise<unknown>): Promise<void> {
    const problems = checkChannels(deps.file, next);
    if (problems.length > 0) throw invalid(problems.join("; "));
    const run = writing.then(store, store).then(() => deps.rebuild());
    writing = run.catch(() => {});
    return run;
  }

  function writableChannel(raw: string | undefined) {
    const found = channelOf(raw);
    if (found.channel.type === "echo") throw new GatewayError(403, "echo_channel", `channel ${found.channel.name} answers inside Sluice (type echo): it is not written through this API`);
    return found;
  }
  /** Names are unique across config.json (a tombstoned or overridden channel's name too: dropping
   *  its override brings it back), the API's channels and the channel being written (`own`). */
  const nameTaken = (name: string, own?: { channel: ChannelConfig; meta: ChannelMeta }) => {
    if (own && (name === own.channel.name || (own.meta.source === "config" && name === own.meta.ref))) return;
    if (deps.channels.channels.some((c) => c.name === name) || deps.file.channels.some((c) => c.name === name))
      throw new GatewayError(409, "name_taken", `channel name ${name} is taken`);
  };

  /** 400 when a write points a channel at a link-local or cloud-metadata address, before anything connects */
  async function checkAddress(channel: ChannelConfig, current?: ChannelConfig): Promise<void> {
    if (current && channel.baseUrl === current.baseUrl) return;
    const refusal = await deps.guard.refusal(channel.baseUrl);
    if (refusal) throw invalid(`base_url: ${refusal}`);
  }

  async function setStatus(ids: unknown, status: unknown): Promise<void> {
    if (status !== ENABLED && status !== DISABLED) throw invalid("status: expected 1 (enabled) or 2 (disabled)");
    if (!Array.isArray(ids) || ids.length === 0) throw invalid("ids: expected a non-empty list of channel ids");
    const refs = ids.map((id) => channelOf(String(id)).meta);
    const rows = deps.book.rowIds(refs.map((m) => m.ref));
    await deps.book.setStatus(rows, status);
    deps.rebuild();
  }

  /** a write or status change, counted by its outcome (sluice_channel_writes_total) once the caller is an admin */
  const counted =
    (op: ChannelWriteOp, handle: (event: H3Event) => Promise<Response>) =>
    async (event: H3Event): Promise<Response> => {
      try {
        const answer = await handle(event);
        deps.observer.channelWrite(op, "ok");
        return answer;
      } catch (err) {
        deps.observer.channelWrite(op, err instanceof GatewayError && err.status < 500 ? "refused" : "error");
        throw err;
      }
    };

  return {
    all: async () => ok(views()),
    list: async (event: H3Event) => {
      const q = new URL(event.req.url).searchParams;
      const page = positive(q.get("p") || q.get("page"), 1);
      const perPage = Math.min(positive(q.get("per_page"), 10), 100);
      const search = (q.get("search") ?? "").toLowerCase();
      const found = views().filter((c) => !search || c.name.toLowerCase().includes(search) || c.models.some((m) => m.toLowerCase().includes(search)) || String(c.id) === search);
      return ok({ channels: found.slice((page - 1) * perPage, page * perPage), total: found.length });
    },
    one: async (event: H3Event) => {
      const { channel, meta } = channelOf(event.context.params?.id);
      return ok(viewOf(channel, meta));
    },
    typeMetas: async () => ok(TYPE_METAS),

    create: counted("create", async (event) => {
      writer();
      const body = readChannelBody(await deps.readJson(event));
      const channel = parsedChannel(() => channelFrom(body, undefined, deps.configured));
      await checkAddress(channel);
      nameTaken(channel.name);
      let id = 0;
      await commit([...deps.channels.channels, channel], async () => (id = await deps.book.create(channel, body.status ?? ENABLED, Date.now())));
      return ok(viewOf({ ...channel, id }, { id, ref: "", source: "api", overridden: false, status: body.status ?? ENABLED, createdAt: Date.now() }));
    }),
    update: counted("update", async (event) => {
      writer();
      const found = writableChannel(event.context.params?.id);
      const { channel: current, meta } = found;
      const body = readChannelBody(await deps.readJson(event));
      const channel = parsedChannel(() => channelFrom(body, current, deps.configured));
      await checkAddress(channel, current);
      nameTaken(channel.name, found);
      const next = deps.channels.channels.map((c) => (c.name === current.name ? { ...channel, id: current.id } : c));
      await commit(next, async () => {
        await deps.book.write([{ ref: meta.ref, record: toRecord(channel), deleted: false }]);
        if (body.status !== undefined && body.status !== meta.status) await deps.book.setStatus(deps.book.rowIds([meta.ref]), body.status);
      });
      return ok(viewOf({ ...channel, id: meta.id }, { ...meta, overridden: meta.source === "config", status: body.status ?? meta.status }));
    }),
    remove: counted("delete", async (event) => {
      writer();
      await removeAll([event.context.params?.id]);
      return ok();
    }),
    batchRemove: counted("delete", async (event) => {
      writer();
      const body = await deps.readJson(event);
      const ids = Array.isArray(body) ? body : (body as { ids?: unknown } | null)?.ids;
      if (!Array.isArray(ids) || ids.length === 0) throw invalid("ids: expected a non-empty list of channel ids");
      await removeAll(ids.map(String));
      return ok();
    }),
    status: counted("status", async (event) => {
      const body = (await deps.readJson(event)) as { status?: unknown } | null;
      await setStatus([event.context.params?.id], body?.status);
      return ok();
    }),
    batchStatus: counted("status", async (event) => {
      const body = (await deps.readJson(event)) as { ids?: unknown; status?: unknown } | null;
      await setStatus(body?.ids, body?.status);
      return ok();
    }),
  };

  /** Deletes channels, all or nothing: an unknown id deletes none. */
  async function removeAll(ids: Array<string | undefined>): Promise<void> {
    const gone = ids.map((id) => writableChannel(id));
    const names = new Set(gone.map((g) => g.channel.name));
    const next = deps.channels.channels.filter((c) => !names.has(c.name));
    await commit(next, () => deps.book.write(gone.map((g) => ({ ref: g.meta.ref, record: null, deleted: true }))));
  }
}

/** The problems of `file` served with `channels`, as a reload reports them; a model left without a
 *  channel is none (it answers 503 until a channel serves it). Never a key: messages name paths. */
export function checkChannels(file: Config, channels: ChannelConfig[]): string[] {
  const parsed = configSchema.safeParse({ ...file, channels: channels.length > 0 ? channels : file.channels.slice(0, 0) });
  if (parsed.success) return [];
  return parsed.error.issues
    .filter((i) => !i.message.startsWith("no channel serves model") && !(i.path.length === 1 && i.path[0] === "channels" && channels.length === 0))
    .map((i) => describeIssue(i, file, { words: "schema" }).text);
}

function parsedChannel(make: () => ChannelConfig): ChannelConfig {
  try {
    return make();
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    const issue = err instanceof z.ZodError ? err.issues[0] : undefined;
    throw invalid(issue ? describeIssue(issue, undefined, { words: "schema", root: "channel" }).text : "invalid channel");
  }
}

function idOf(raw: string | undefined): number {
  const id = Number(raw);
  if (!Number.isInteger(id) || id <= 0) throw invalid(`id: expected a positive integer channel id`);
  return id;
}

function positive(raw: string | null, fallback: number): number {
  const n = Number(raw);
  return raw && Number.isInteger(n) && n > 0 ? n : fallback;
}

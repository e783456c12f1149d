// The channels FastGPT's AI Proxy API sees and writes (docs/fastgpt.md#channels): config.json's, each
// replaced by the record written over it through the API (an override) or left out (a tombstone),
// then those created through the API; every one with a number and a status kept in the store. The
// book holds the store's records in memory, so a request's routing reads no store: it is read again
// at start, after a reload, after a write here, and when another instance says it wrote.
import { randomUUID } from "node:crypto";
import type { ClusterState } from "../cluster/types.js";
import { channelSchema, type ChannelConfig, type Config } from "../config/schema.js";
import type { ChannelRecord, ChannelWrite, Store } from "../store/types.js";

export const ENABLED = 1;
export const DISABLED = 2;

/** What the API says of an effective channel besides its config. */
export interface ChannelMeta {
  id: number;
  ref: string;
  source: "config" | "api";
  /** a config.json channel written through the API */
  overridden: boolean;
  status: number;
  createdAt: number;
}

export interface EffectiveChannels {
  channels: ChannelConfig[];
  /** by channel name */
  meta: Map<string, ChannelMeta>;
  /** config.json's channels the store hides (overridden or deleted through the API), by name */
  hidden: string[];
}

export interface ChannelBook {
  /** Adds a record for every channel of `config` the store has not seen, then reads them all. */
  sync(config: Config): Promise<void>;
  /** Reads the records again (another instance wrote). */
  refresh(): Promise<void>;
  /** The channels to serve under `config`: its own, with the store's records over them. */
  effective(config: Config): EffectiveChannels;
  /** Is the channel of that name enabled (unknown names are)? Read on every routing decision. */
  enabled(name: string): boolean;
  /** Writes records (all or nothing), reads them back and tells the other instances. */
  write(writes: ChannelWrite[]): Promise<void>;
  /** Creates a channel record; its id. */
  create(channel: ChannelConfig, status: number, now: number): Promise<number>;
  /** The store row ids of channels, by ref. */
  rowIds(refs: string[]): number[];
  /** Sets the status of channels by their store row ids; the ids that exist. */
  setStatus(rowIds: number[], status: number): Promise<number[]>;
  /** Those of `names` (config.json's) that a channel created through the API also has: a store
   *  written before names were unique across both, or a config.json that gained the name since. */
  clashes(names: string[]): string[];
  /** Hears what another instance wrote: `changed` runs once the records are read again. */
  listen(changed: () => void): () => void;
}

export function createChannelBook(store: Store, state: ClusterState): ChannelBook {
  let records = new Map<string, ChannelRecord>();
  /** channel name → status, of the effective channels last computed */
  let statusByName = new Map<string, number>();

  async function read(): Promise<void> {
    records = new Map((await store.listChannelRecords()).map((r) => [r.ref, r]));
  }

  async function changed(): Promise<void> {
    await read();
    await state.publishChannelChange();
  }

  function effective(config: Config): EffectiveChannels {
    const channels: ChannelConfig[] = [];
    const meta = new Map<string, ChannelMeta>();
    const hidden: string[] = [];
    const add = (channel: ChannelConfig, rec: ChannelRecord | undefined, source: "config" | "api", overridden: boolean) => {
      const id = source === "config" && channel.id !== undefined ? channel.id : rec?.id;
      if (id === undefined) return void channels.push(channel); // not synced yet: served, not numbered
      channels.push({ ...channel, id });
      meta.set(channel.name, { id, ref: rec?.ref ?? channel.name, source, overridden, status: rec?.status ?? ENABLED, createdAt: rec?.createdAt ?? 0 });
    };
    for (const channel of config.channels) {
      const rec = records.get(channel.name);
      if (rec?.deleted) hidden.push(channel.name);
      else if (rec?.record) {
        hidden.push(channel.name);
        add({ ...fromRecord(rec.record), id: channel.id }, rec, "config", true);
      } else add(channel, rec, "config", false);
    }
    for (const rec of records.values()) if (rec.ref.startsWith(API_REF) && !rec.deleted && rec.record) add(fromRecord(rec.record), rec, "api", false);
    statusByName = new Map([...meta].map(([name, m]) => [name, m.status]));
    return { channels, meta, hidden };
  }

  return {
    async sync(config) {
      const known = new Set((await store.listChannelRecords()).map((r) => r.ref));
      const now = Date.now();
      const missing = config.channels.filter((c) => !known.has(c.name)).map((c) => ({ ref: c.name, id: c.id, record: null, status: ENABLED, createdAt: now }));
      await store.addChannelRecords(missing);
      await read();
    },
    refresh: read,
    rowIds: (refs) => refs.flatMap((ref) => records.get(ref)?.id ?? []),
    effective,
    enabled: (name) => statusByName.get(name) !== DISABLED,
    async write(writes) {
      await store.writeChannelRecords(writes);
      await changed();
    },
    async create(channel, status, now) {
      const [row] = await store.addChannelRecords([{ ref: API_REF + randomUUID(), record: toRecord(channel), status, createdAt: now }]);
      await changed();
      return row!.id;
    },
    async setStatus(rowIds, status) {
      const done = await store.setChannelStatus(rowIds, status);
      await changed();
      return done;
    },
    clashes(names) {
      const api = new Set([...records.values()].flatMap((r) => (r.ref.startsWith(API_REF) && !r.deleted && r.record ? [fromRecord(r.record).name] : [])));
      return names.filter((name) => api.has(name));
    },
    listen(heard) {
      return state.onChannelChange(() => void read().then(heard, () => {}));
    },
  };
}

const API_REF = "api:";

/** What the store keeps of a channel written through the API: its config, id aside (the row's). */
export function toRecord(channel: ChannelConfig): string {
  const { id: _, ...rest } = channel;
  return JSON.stringify(rest);
}

function fromRecord(text: string): ChannelConfig {
  return channelSchema.parse(JSON.parse(text));
}

// The share-link API (docs/api.md#the-share-api): init, a user's chat list, one chat's messages, and the chat
// window page. Tokens travel in JSON bodies so they stay out of URLs and access logs; the bodies are
// read by the pipeline's unmetered mode (src/metered/local.ts), which hands each call its body.
import { factsOf } from "../http/facts.js";
import type { H3Event } from "h3";
import { z } from "zod";
import type { ClusterState } from "../cluster/types.js";
import type { ServerConfig, ShareLinkConfig } from "../config/schema.js";
import { notFound } from "../http/errors.js";
import { parseBody } from "../http/validation.js";
import type { ShareUser, Store } from "../store/types.js";
import { createShareApiRate } from "./api-rate.js";
import type { ShareAuth } from "./callbacks.js";
import { chatNotOwned, resolveShareLink } from "./links.js";
import { createSharePage } from "./page.js";

export interface ShareRoutesDeps {
  links: Map<string, ShareLinkConfig>;
  apps: Map<string, { id: string; name?: string }>;
  store: Store;
  auth: ShareAuth;
  now?: () => number;
  /** holds the API's rate windows, per link and per client address */
  state: ClusterState;
  /** `trustProxy` finds the client's address, `shareApiQpm` is its calls a minute */
  server: Pick<ServerConfig, "trustProxy" | "shareApiQpm">;
  /** `server.sharePage`: the chat window page's frame policy */
  page: ServerConfig["sharePage"];
}

export interface ShareRoutes {
  init(event: H3Event, body: unknown): Promise<ShareInitReply>;
  chats(event: H3Event, body: unknown): Promise<{ chats: ShareChatSummary[] }>;
  chat(event: H3Event, body: unknown): Promise<ShareChatReply>;
  page(event: H3Event): Response;
}

export interface ShareChatSummary {
  chatId: string;
  title: string;
  updatedAt: number;
}

export interface ShareInitReply {
  shareId: string;
  appName: string;
  uid: string;
  chats: ShareChatSummary[];
}

export interface ShareChatReply {
  chatId: string;
  messages: Array<{ role: "user" | "assistant"; content: string; createdAt: number }>;
}

const DAY_MS = 24 * 60 * 60 * 1000;
// docs/store.md#record-pull: a user's record pull is at most 20 chats from the last 30 days
const LIST_LIMIT = 20;
const LIST_WINDOW_MS = 30 * DAY_MS;
const MAX_CHAT_MESSAGES = 1000;
// a pulled chat's messages hold at most 4 MiB of text (the newest whole rounds), so one pull cannot
// make the gateway read and send a history of any size (docs/api.md#share-links)
const MAX_CHAT_BYTES = 4 * 1024 * 1024;

const userBody = z.object({
  shareId: z.string().min(1).max(64),
  outLinkUid: z.string().min(1).max(4096),
});
const chatBody = userBody.extend({ chatId: z.string().min(1).max(255) });

export function createShareRoutes(deps: ShareRoutesDeps): ShareRoutes {
  const now = deps.now ?? Date.now;
  const admitCall = createShareApiRate({ state: deps.state, server: deps.server });

  /** The link and the user's uid; the operator's init callback (cached) maps a token to a uid. */
  async function identify(event: H3Event, body: z.infer<typeof userBody>) {
    const link = resolveShareLink(deps.links, body.shareId, now());
    // the request's log line and server span name the link (docs/tracing.md#spans)
    factsOf(event).shareId = link.shareId;
    // counted before the operator is asked: made-up tokens must not make the gateway a token oracle
    await admitCall(event, link, now());
    const uid = await deps.auth.init(link, body.outLinkUid, factsOf(event).trace);
    const owner: ShareUser = { shareId: link.shareId, uid };
    return { link, owner };
  }

  const listChats = (owner: ShareUser) =>
    deps.store.listChats(owner, { since: now() - LIST_WINDOW_MS, limit: LIST_LIMIT });

  return {
    async init(event, body) {
      const { link, owner } = await identify(event, parseBody(userBody, body));
      const appName = deps.apps.get(link.appId)?.name ?? link.appId;
      return { shareId: link.shareId, appName, uid: owner.uid, chats: await listChats(owner) };
    },

    async chats(event, body) {
      const { owner } = await identify(event, parseBody(userBody, body));
      return { chats: await listChats(owner) };
    },

    async chat(event, body) {
      const { chatId, ...user } = parseBody(chatBody, body);
      const { link, owner } = await identify(event, user);
      // the chat and its messages in one read; the owner is checked before any message is read
      const found = await deps.store.openChat(link.appId, chatId, owner, { limit: MAX_CHAT_MESSAGES, maxBytes: MAX_CHAT_BYTES, create: false });
      if (found.status === "missing") throw notFound("chat_not_found", "This chat does not exist.");
      if (found.status === "not_owned") throw chatNotOwned();
      return {
        chatId,
        messages: found.messages.map(({ role, content, createdAt }) => ({ role, content, createdAt })),
      };
    },

    page: createSharePage(deps.page),
  };
}

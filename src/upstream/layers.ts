// A channel's client as composed layers (docs/architecture.md#channel-layers), as undici composes
// its interceptors: a `Post` sends one request and resolves to the reply; a `Layer` makes a Post out
// of the next one — it may change the request on its way down (a header, the body's model name),
// the reply on its way up (a status into an error), or both. The transport at the bottom knows bytes
// only. Layers are composed once per channel, from its config: a request runs through plain calls.
import type { UpstreamChannelConfig, PostRequest, UpstreamReply } from "./types.js";

export type Post = (req: PostRequest) => Promise<UpstreamReply>;
export type Layer = (next: Post) => Post;

/** A layer for the channels it applies to, from their config; undefined: none for this channel.
 *  (An extra layer for every channel — a header on every upstream attempt — is registered as one of
 *  these: RouterOptions.layers.) */
export type ChannelLayer = (channel: UpstreamChannelConfig) => Layer | undefined;

/** `layers` around `transport`, the first outermost: compose([a, b], t) posts through a(b(t)). */
export function compose(layers: ReadonlyArray<Layer | undefined>, transport: Post): Post {
  let post = transport;
  for (let i = layers.length - 1; i >= 0; i--) {
    const layer = layers[i];
    if (layer) post = layer(post);
  }
  return post;
}

// What the route table says of a request beyond its handler (src/routes.ts), kept on its event for
// the kinds to read: whether its path is one FastGPT calls (`/api/v1/…`), whose answers are
// FastGPT's (docs/fastgpt.md#reasoning). Read from the table, never from the URL: a path spelled
// otherwise (`/api/%761/…`) is routed the same and flagged the same.
import type { H3Event } from "h3";

interface Flags {
  fastgptRoute?: true;
}

/** Marks `event` as one on a path FastGPT calls. */
export function markFastgptRoute(event: H3Event): H3Event {
  (event.context as Flags).fastgptRoute = true;
  return event;
}

/** Whether `event` came in on a path FastGPT calls. */
export const onFastgptRoute = (event: H3Event): boolean => (event.context as Flags).fastgptRoute === true;

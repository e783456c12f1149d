// The Store interface's contract: behaviour every implementation (memory, SQLite, PostgreSQL) must
// show, with the same values. describeStoreContract(name, open) runs it against one of them; a fresh,
// empty store per test. Chats are read through openChat, as production reads them.
import { afterEach, beforeEach, describe } from "vitest";
import type { Store } from "../../src/store/types.js";
import { describeChannelContract, describeLogContract } from "./store-contract-channels.js";
import { describeChatContract } from "./store-contract-chats.js";
import { describeRecordContract } from "./store-contract-records.js";

export * from "./store-rows.js";

export function describeStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`the Store contract: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });
    describeChatContract(() => store);
    describeRecordContract(() => store);
    describeChannelContract(() => store);
    describeLogContract(() => store);
  });
}

// What this tab remembers across a reload (sessionStorage): the chat that was open, and the last
// round whose answer the user stopped or left mid-stream. The gateway stores such a partial answer
// when the client goes away, but a reloaded page can ask for the chat before that write lands; the
// kept round stands in for it until the gateway's copy is there.

const openKey = (shareId) => "sluice-share-open:" + shareId;
const roundKey = (shareId) => "sluice-share-round:" + shareId;

// storage can be disabled or full: the window then simply forgets
function read(key) {
  try { return sessionStorage.getItem(key); } catch { return null; }
}
function write(key, value) {
  try {
    if (value === null) sessionStorage.removeItem(key);
    else sessionStorage.setItem(key, value);
  } catch { /* see above */ }
}

export function createTabMemory(shareId) {
  return {
    openChat: () => read(openKey(shareId)),
    setOpenChat: (chatId) => write(openKey(shareId), chatId),
    /** { chatId, question, answer, at } or null */
    keptRound() {
      try { return JSON.parse(read(roundKey(shareId)) || "null"); } catch { return null; }
    },
    keepRound: (round) => write(roundKey(shareId), JSON.stringify(round)),
    forgetRound: () => write(roundKey(shareId), null),
  };
}

/** Whether the gateway's messages of the round's chat already end with the kept round. */
export function hasRound(messages, round) {
  const question = messages[messages.length - 2];
  return Boolean(question && question.role === "user" && question.content === round.question);
}

/** The chat list with the kept round's chat in it, should the gateway not list it yet. */
export function withKeptChat(chats, round) {
  if (!round || chats.some((c) => c.chatId === round.chatId)) return chats;
  return [{ chatId: round.chatId, title: round.question, updatedAt: round.at }, ...chats];
}

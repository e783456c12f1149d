// The share-link chat window's behaviour, bundled with marked and DOMPurify by ../page.ts and served
// from the gateway itself (the page's policy runs no script from anywhere else). User text and the
// gateway's words go in through textContent; only answers become HTML, through ./markdown.js.
import { readAnswer } from "./answer-stream.js";
import { createCopyButton } from "./clipboard.js";
import { element } from "./dom.js";
import { describeFailure, failureOf } from "./errors.js";
import { createTranslator, pickLocale } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import { createTabMemory, hasRound, withKeptChat } from "./tab-memory.js";

const locale = pickLocale(navigator.language);
const t = createTranslator(locale);
const $ = (id) => document.getElementById(id);
const ui = {
  sidebar: $("sidebar"), toggle: $("toggle-sidebar"), main: $("main"), list: $("chat-list"), newChat: $("new-chat"),
  title: $("app-name"), error: $("error"), messages: $("messages"), form: $("composer"),
  input: $("input"), send: $("send"), stop: $("stop"),
};
const params = new URLSearchParams(location.search);
const shareId = params.get("shareId") || "";
const outLinkUid = params.get("authToken") || localId();
const memory = createTabMemory(shareId);
let chatId = null;
/** the round being answered: { controller, round: { chatId, question, answer, at } } */
let current = null;

function applyWords() {
  document.documentElement.lang = locale === "zh" ? "zh-CN" : "en";
  document.title = t("title");
  ui.title.textContent = t("title");
  ui.sidebar.setAttribute("aria-label", t("yourChats"));
  ui.newChat.textContent = t("newChat");
  ui.toggle.setAttribute("aria-label", t("showChats"));
  ui.input.placeholder = t("placeholder");
  ui.input.setAttribute("aria-label", t("message"));
  ui.send.textContent = t("send");
  ui.stop.textContent = t("stop");
}

// crypto.getRandomValues works on plain http too, unlike crypto.randomUUID
function randomHex(bytes) {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function localId() {
  const key = "sluice-share-localId:" + shareId;
  let id = null;
  try { id = localStorage.getItem(key); } catch { /* storage disabled: one id per page load */ }
  if (!id) {
    id = "shareChat-" + Date.now() + "-" + randomHex(8);
    try { localStorage.setItem(key, id); } catch { /* see above */ }
  }
  return id;
}

// relative to /chat/share, so the gateway also works behind a path prefix
const apiUrl = (path) => new URL("../api/" + path, location.href).toString();

async function api(path, extra) {
  const res = await fetch(apiUrl(path), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ shareId, outLinkUid, ...extra }),
  });
  if (!res.ok) throw await failureOf(res);
  return res.json();
}

function showError(err) {
  ui.error.textContent = describeFailure(err, t);
  ui.error.hidden = false;
}

function clearError() {
  ui.error.textContent = "";
  ui.error.hidden = true;
}

function setStreaming(on) {
  ui.send.disabled = on;
  ui.stop.hidden = !on;
}

function openSidebar(open) {
  ui.sidebar.classList.toggle("open", open);
  ui.toggle.setAttribute("aria-expanded", String(open));
}

function renderChatList(chats) {
  const items = withKeptChat(chats, memory.keptRound()).map((chat) => {
    const button = element("button", "chat-item");
    button.type = "button";
    button.dataset.chatId = chat.chatId;
    button.setAttribute("aria-current", String(chat.chatId === chatId));
    const time = new Date(chat.updatedAt).toLocaleString(navigator.language);
    button.append(element("span", "chat-title", chat.title || t("untitled")), element("span", "chat-time", time));
    button.addEventListener("click", () => openChat(chat.chatId));
    const li = element("li");
    li.append(button);
    return li;
  });
  if (items.length === 0) items.push(element("li", "empty", t("noChats")));
  ui.list.replaceChildren(...items);
}

function markActive() {
  for (const item of ui.list.querySelectorAll(".chat-item")) item.setAttribute("aria-current", String(item.dataset.chatId === chatId));
}

const nearBottom = () => ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 48;

function addQuestion(text) {
  const el = element("div", "msg user", text);
  ui.messages.append(el);
  ui.messages.scrollTop = ui.messages.scrollHeight;
  return el;
}

const copyButton = (getText, kind) =>
  kind === "copy-code"
    ? createCopyButton(getText, { className: "copy-code", label: t("copy"), title: t("copyCode") }, t)
    : createCopyButton(getText, { className: "copy-answer", label: t("copy"), title: t("copyAnswer") }, t);

/** An answer bubble with its copy button; `show(text)` renders at most once a frame while streaming. */
function addAnswer(text) {
  const turn = element("div", "turn");
  const bubble = element("div", "msg assistant");
  const actions = element("div", "actions");
  let source = text;
  actions.append(copyButton(() => source, "copy-answer"));
  turn.append(bubble, actions);
  ui.messages.append(turn);
  let frame = 0;
  const render = () => {
    frame = 0;
    const follow = nearBottom();
    renderMarkdown(bubble, source, copyButton, t);
    if (follow) ui.messages.scrollTop = ui.messages.scrollHeight;
  };
  render();
  return {
    turn,
    show(next) {
      source = next;
      frame ||= requestAnimationFrame(render);
    },
    /** the last text, rendered now (a hidden tab runs no animation frames) */
    finish(stopped) {
      cancelAnimationFrame(frame);
      render();
      turn.classList.remove("pending");
      if (stopped) actions.append(element("span", "stopped", t("stopped")));
    },
  };
}

async function refreshChats() {
  const { chats } = await api("share/chats", {});
  renderChatList(chats);
}

/** Shows a chat's messages; a reopening after a reload (`quiet`) that finds nothing starts afresh. */
async function openChat(id, quiet = false) {
  if (current) return;
  clearError();
  openSidebar(false);
  const kept = memory.keptRound();
  const ours = kept && kept.chatId === id ? kept : null;
  let messages;
  try {
    messages = (await api("share/chat", { chatId: id })).messages;
  } catch (err) {
    // the round the user left may be the chat's first, not stored yet: it is shown from memory
    if (!(ours && err.code === "chat_not_found")) {
      if (quiet) memory.setOpenChat(null);
      else showError(err);
      return;
    }
    messages = [];
  }
  if (ours && hasRound(messages, ours)) memory.forgetRound();
  else if (ours) messages = [...messages, { role: "user", content: ours.question }, { role: "assistant", content: ours.answer }];
  chatId = id;
  memory.setOpenChat(id);
  ui.messages.replaceChildren();
  for (const m of messages) {
    if (m.role === "user") addQuestion(m.content);
    else addAnswer(m.content);
  }
  ui.messages.scrollTop = ui.messages.scrollHeight;
  markActive();
}

function newChat() {
  if (current) return;
  chatId = null;
  memory.setOpenChat(null);
  ui.messages.replaceChildren();
  clearError();
  markActive();
  openSidebar(false);
  ui.input.focus();
}

async function send(text) {
  if (current || !text.trim()) return;
  clearError();
  memory.forgetRound();
  chatId ||= "chat-" + Date.now().toString(36) + "-" + randomHex(8);
  memory.setOpenChat(chatId);
  const round = { chatId, question: text, answer: "", at: Date.now() };
  const controller = new AbortController();
  current = { controller, round };
  const question = addQuestion(text);
  const answer = addAnswer("");
  answer.turn.classList.add("pending");
  ui.input.value = "";
  setStreaming(true);
  try {
    const res = await fetch(apiUrl("v1/chat/completions"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ shareId, outLinkUid, chatId, stream: true, messages: [{ role: "user", content: text }] }),
      signal: controller.signal,
    });
    if (!res.ok) throw await failureOf(res);
    await readAnswer(res, (delta) => answer.show((round.answer += delta)));
  } catch (err) {
    if (!controller.signal.aborted) showError(err);
  } finally {
    current = null;
    const stopped = controller.signal.aborted;
    answer.finish(stopped && round.answer !== "");
    if (!round.answer) {
      // nothing was answered (and nothing stored): give the question back so the user can retry it
      answer.turn.remove();
      question.remove();
      if (!ui.input.value) ui.input.value = text;
    } else if (stopped) {
      memory.keepRound(round);
    }
    setStreaming(false);
  }
  await refreshChats().catch(showError);
}

/** Stops the answer: the gateway sees the client leave, cuts the upstream and stores what came. */
function stop() {
  current?.controller.abort();
}

async function start() {
  applyWords();
  if (!shareId) {
    ui.error.textContent = t("linkIncomplete");
    ui.error.hidden = false;
    ui.send.disabled = true;
    return;
  }
  try {
    const info = await api("share/init", {});
    ui.title.textContent = info.appName;
    document.title = info.appName;
    renderChatList(info.chats);
  } catch (err) {
    showError(err);
    ui.send.disabled = true;
    return;
  }
  const open = memory.openChat();
  if (open) await openChat(open, true);
}

ui.form.addEventListener("submit", (e) => {
  e.preventDefault();
  send(ui.input.value);
});
ui.input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send(ui.input.value);
  }
});
ui.stop.addEventListener("click", stop);
ui.newChat.addEventListener("click", newChat);
ui.toggle.addEventListener("click", (e) => {
  e.stopPropagation(); // the click would otherwise reach #main and close the list again
  openSidebar(!ui.sidebar.classList.contains("open"));
});
// phone width: the list covers the window; a tap beside it or Escape puts it away
ui.main.addEventListener("click", () => openSidebar(false));
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") openSidebar(false);
});
// leaving (or reloading) mid-answer: the gateway keeps what came; so does this tab, in case the
// reloaded page asks before the gateway has written it
addEventListener("pagehide", () => {
  if (current && current.round.answer) memory.keepRound(current.round);
});
start();

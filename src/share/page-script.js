// The share-link chat window's behaviour (served inline by page.ts; plain browser JavaScript, no build).
// Every piece of user or server text goes through textContent, never innerHTML.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const ui = {
    sidebar: $("sidebar"), toggle: $("toggle-sidebar"), main: $("main"), list: $("chat-list"), newChat: $("new-chat"),
    title: $("app-name"), error: $("error"), messages: $("messages"), form: $("composer"),
    input: $("input"), send: $("send"),
  };
  const params = new URLSearchParams(location.search);
  const shareId = params.get("shareId") || "";
  const outLinkUid = params.get("authToken") || localId();
  let chatId = null;
  let busy = false;

  // crypto.getRandomValues works on plain http too, unlike crypto.randomUUID
  function randomHex(bytes) {
    const buf = crypto.getRandomValues(new Uint8Array(bytes));
    return Array.from(buf, (b) => b.toString(16).padStart(2, "0")).join("");
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

  function showError(text) {
    ui.error.textContent = text;
    ui.error.hidden = false;
  }

  function clearError() {
    ui.error.textContent = "";
    ui.error.hidden = true;
  }

  async function errorOf(res) {
    const data = await res.json().catch(() => null);
    const message = data && data.error && data.error.message;
    return new Error(message || "Request failed (HTTP " + res.status + ")");
  }

  async function api(path, extra) {
    const res = await fetch(apiUrl(path), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ shareId, outLinkUid, ...extra }),
    });
    if (!res.ok) throw await errorOf(res);
    return res.json();
  }

  function setBusy(value) {
    busy = value;
    ui.send.disabled = value;
  }

  function openSidebar(open) {
    ui.sidebar.classList.toggle("open", open);
    ui.toggle.setAttribute("aria-expanded", String(open));
  }

  function renderChatList(chats) {
    const items = chats.map((chat) => {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "chat-item";
      button.dataset.chatId = chat.chatId;
      button.setAttribute("aria-current", String(chat.chatId === chatId));
      const title = document.createElement("span");
      title.className = "chat-title";
      title.textContent = chat.title || "Untitled chat";
      const time = document.createElement("span");
      time.className = "chat-time";
      time.textContent = new Date(chat.updatedAt).toLocaleString();
      button.append(title, time);
      button.addEventListener("click", () => openChat(chat.chatId));
      li.append(button);
      return li;
    });
    if (items.length === 0) {
      const empty = document.createElement("li");
      empty.className = "empty";
      empty.textContent = "No chats yet";
      items.push(empty);
    }
    ui.list.replaceChildren(...items);
  }

  function markActive() {
    for (const item of ui.list.querySelectorAll(".chat-item")) {
      item.setAttribute("aria-current", String(item.dataset.chatId === chatId));
    }
  }

  function addMessage(role, content) {
    const el = document.createElement("div");
    el.className = "msg " + role;
    el.textContent = content;
    ui.messages.append(el);
    ui.messages.scrollTop = ui.messages.scrollHeight;
    return el;
  }

  async function refreshChats() {
    const { chats } = await api("share/chats", {});
    renderChatList(chats);
  }

  async function openChat(id) {
    if (busy) return;
    clearError();
    openSidebar(false);
    try {
      const chat = await api("share/chat", { chatId: id });
      chatId = chat.chatId;
      ui.messages.replaceChildren();
      chat.messages.forEach((m) => addMessage(m.role, m.content));
      markActive();
    } catch (err) {
      showError(err.message);
    }
  }

  function newChat() {
    if (busy) return;
    chatId = null;
    ui.messages.replaceChildren();
    clearError();
    markActive();
    openSidebar(false);
    ui.input.focus();
  }

  /** One SSE line of the answer; returns "done" at [DONE]; throws on an error object. */
  function readLine(line, state, onDelta) {
    if (line.startsWith("event:")) {
      state.event = line.slice(6).trim();
      return;
    }
    if (!line.startsWith("data:")) return;
    const data = line.slice(5).trim();
    if (data === "[DONE]") return "done";
    let payload;
    try { payload = JSON.parse(data); } catch { return; }
    if (state.event === "error" || (payload && payload.error)) {
      const err = (payload && payload.error) || payload || {};
      throw new Error(err.message || "The answer was interrupted.");
    }
    if (state.event === "flowResponses") return;
    const choice = payload && payload.choices && payload.choices[0];
    const delta = choice && choice.delta && choice.delta.content;
    if (delta) onDelta(delta);
  }

  async function readAnswer(res, onDelta) {
    if (!(res.headers.get("content-type") || "").includes("text/event-stream")) {
      const data = await res.json();
      onDelta((data.choices && data.choices[0] && data.choices[0].message.content) || "");
      return;
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const state = { event: "" };
    let buffer = "";
    let done = false;
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buffer += value;
      const lines = buffer.split("\n");
      buffer = lines.pop();
      for (const raw of lines) {
        const line = raw.replace(/\r$/, "");
        if (line === "") state.event = "";
        else if (readLine(line, state, onDelta) === "done") done = true;
      }
    }
    if (!done) throw new Error("The answer was interrupted before it finished.");
  }

  async function send(text) {
    if (busy || !text.trim()) return;
    setBusy(true);
    clearError();
    chatId = chatId || "chat-" + Date.now().toString(36) + "-" + randomHex(8);
    const question = addMessage("user", text);
    const answer = addMessage("assistant", "");
    answer.classList.add("pending");
    ui.input.value = "";
    try {
      const res = await fetch(apiUrl("v1/chat/completions"), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ shareId, outLinkUid, chatId, stream: true, messages: [{ role: "user", content: text }] }),
      });
      if (!res.ok) throw await errorOf(res);
      await readAnswer(res, (delta) => {
        answer.textContent += delta;
        ui.messages.scrollTop = ui.messages.scrollHeight;
      });
      await refreshChats();
    } catch (err) {
      showError(err.message);
      if (!answer.textContent) {
        // nothing was answered: give the question back so the user can retry it
        answer.remove();
        question.remove();
        ui.input.value = text;
      }
    } finally {
      answer.classList.remove("pending");
      setBusy(false);
    }
  }

  async function start() {
    if (!shareId) {
      showError("This chat link is incomplete: it has no shareId.");
      setBusy(true);
      return;
    }
    try {
      const info = await api("share/init", {});
      ui.title.textContent = info.appName;
      document.title = info.appName;
      renderChatList(info.chats);
    } catch (err) {
      showError(err.message);
      setBusy(true);
    }
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
  start();
})();

// The window's words in English and Chinese, chosen by the browser's language (zh* → Chinese).
// Every text the window writes itself comes from here; only the operator's own messages (its
// identity server's refusals) and request-validation messages are shown as the gateway sent them.

const EN = {
  title: "Chat",
  yourChats: "Your chats",
  newChat: "+ New chat",
  showChats: "Show chats",
  noChats: "No chats yet",
  untitled: "Untitled chat",
  message: "Message",
  placeholder: "Ask a question (Enter to send, Shift+Enter for a new line)",
  send: "Send",
  stop: "Stop",
  copy: "Copy",
  copyAnswer: "Copy this answer",
  copyCode: "Copy code",
  copied: "Copied",
  copyFailed: "Copy failed",
  stopped: "Stopped — the answer so far is kept.",
  image: "image",
  // what went wrong, and what to do about it
  linkIncomplete: "This chat link is incomplete. Open the whole address you were given.",
  linkNotFound: "This chat link does not exist. Check that you opened the whole address.",
  linkExpired: "This chat link has expired. Ask whoever shared it with you for a new one.",
  tooManyIn: "Too many questions — try again in {s} s.",
  tooMany: "Too many questions — try again in a minute.",
  allowanceUsed: "This chat link has used up its allowance. Ask whoever shared it with you to raise it.",
  busyIn: "The model is busy — try again in {s} s.",
  busy: "The model is busy — try again in a moment.",
  identityUnavailable: "Your identity could not be checked just now. Try again in a moment.",
  chatNotOwned: "This chat belongs to another user.",
  chatNotFound: "This chat no longer exists. Start a new one.",
  interrupted: "The answer broke off before it finished. Send the question again to retry.",
  noAnswer: "The model did not answer. Try again in a moment.",
  tooLong: "Your question is too long for this chat. Shorten it and send it again.",
  offline: "The server could not be reached. Check your connection and try again.",
  failed: "Something went wrong on the server (HTTP {status}). Try again in a moment.",
};

const ZH = {
  title: "对话",
  yourChats: "我的对话",
  newChat: "+ 新对话",
  showChats: "显示对话列表",
  noChats: "还没有对话",
  untitled: "未命名对话",
  message: "消息",
  placeholder: "输入问题（Enter 发送，Shift+Enter 换行）",
  send: "发送",
  stop: "停止",
  copy: "复制",
  copyAnswer: "复制这条回答",
  copyCode: "复制代码",
  copied: "已复制",
  copyFailed: "复制失败",
  stopped: "已停止，已保留目前的回答。",
  image: "图片",
  linkIncomplete: "此对话链接不完整，请打开完整的地址。",
  linkNotFound: "此对话链接不存在，请检查地址是否完整。",
  linkExpired: "此对话链接已过期，请向分享者索取新链接。",
  tooManyIn: "提问太频繁，请 {s} 秒后再试。",
  tooMany: "提问太频繁，请一分钟后再试。",
  allowanceUsed: "此对话链接的额度已用完，请联系分享者提高额度。",
  busyIn: "模型繁忙，请 {s} 秒后再试。",
  busy: "模型繁忙，请稍后再试。",
  identityUnavailable: "暂时无法验证你的身份，请稍后再试。",
  chatNotOwned: "此对话属于其他用户。",
  chatNotFound: "此对话已不存在，请开始新对话。",
  interrupted: "回答中断了，请重新发送问题。",
  noAnswer: "模型没有回答，请稍后再试。",
  tooLong: "问题太长了，请缩短后重新发送。",
  offline: "无法连接服务器，请检查网络后重试。",
  failed: "服务器出错了（HTTP {status}），请稍后再试。",
};

/** "zh" for any Chinese browser language (zh, zh-CN, zh-TW, zh-Hans …), else "en". */
export function pickLocale(language) {
  return /^zh\b/i.test(language || "") ? "zh" : "en";
}

export function createTranslator(locale) {
  const words = locale === "zh" ? ZH : EN;
  return (key, vars) => {
    const text = words[key] ?? EN[key] ?? key;
    return vars ? text.replace(/\{(\w+)\}/g, (_, name) => String(vars[name] ?? "")) : text;
  };
}

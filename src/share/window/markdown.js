// An answer's markdown as safe DOM: marked renders, DOMPurify removes anything that could run
// (scripts, event handlers, javascript: links), and the result is finished for the chat window —
// code blocks get a copy button, links open in a new tab without a referrer, and pictures from
// other sites become links (an image from elsewhere would tell that site who is reading).
import DOMPurify from "dompurify";
import { marked } from "marked";
import { element } from "./dom.js";

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  // the page's style policy refuses inline styles anyway; forms have nothing to submit to
  FORBID_ATTR: ["style"],
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select"],
};

/**
 * Replaces `el`'s children with `text` rendered as markdown. `copyButton(getText)` makes the
 * button put beside each code block.
 */
export function renderMarkdown(el, text, copyButton, t) {
  const html = marked.parse(text, { async: false, gfm: true, breaks: true }).trim();
  const fragment = DOMPurify.sanitize(html, PURIFY);
  for (const img of fragment.querySelectorAll("img")) keepImageHere(img, t);
  for (const link of fragment.querySelectorAll("a[href]")) {
    link.target = "_blank";
    link.rel = "noopener noreferrer";
  }
  for (const pre of fragment.querySelectorAll("pre")) frameCode(pre, copyButton);
  for (const table of fragment.querySelectorAll("table")) scrollSideways(table);
  el.replaceChildren(fragment);
}

function keepImageHere(img, t) {
  const src = img.getAttribute("src") || "";
  let url = null;
  try { url = new URL(src, location.href); } catch { /* an unreadable address: dropped below */ }
  if (url && (url.protocol === "data:" || url.origin === location.origin)) return;
  const link = element("a", "", img.getAttribute("alt") || t("image"));
  if (url && (url.protocol === "https:" || url.protocol === "http:")) link.href = url.href;
  img.replaceWith(link);
}

function frameCode(pre, copyButton) {
  const code = pre.querySelector("code");
  // marked ends a block's code with a newline: not part of what is copied
  const last = (code || pre).lastChild;
  if (last && last.nodeType === Node.TEXT_NODE) last.data = last.data.replace(/\n$/, "");
  const frame = element("div", "code-block");
  const bar = element("div", "code-bar");
  const lang = /language-([\w+#.-]+)/.exec((code && code.className) || "")?.[1] ?? "";
  bar.append(element("span", "code-lang", lang), copyButton(() => (code || pre).textContent, "copy-code"));
  pre.replaceWith(frame);
  frame.append(bar, pre);
}

function scrollSideways(table) {
  const box = element("div", "table-scroll");
  table.replaceWith(box);
  box.append(table);
}

// Copy buttons. navigator.clipboard exists only on secure pages (https, localhost); a gateway
// reached over plain http on a LAN address falls back to the older selection-and-copy command.
import { element } from "./dom.js";

const FEEDBACK_MS = 1500;

export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = element("textarea", "offscreen");
  area.value = text;
  area.setAttribute("readonly", "");
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  if (!ok) throw new Error("copy refused");
}

/** A button that copies `getText()`; it says "Copied" (or that it failed) for a moment. */
export function createCopyButton(getText, { className, label, title }, t) {
  const button = element("button", className, label);
  button.type = "button";
  button.title = title;
  button.setAttribute("aria-label", title);
  let timer;
  button.addEventListener("click", async () => {
    let said;
    try {
      await copyText(getText());
      said = t("copied");
    } catch {
      said = t("copyFailed");
    }
    button.textContent = said;
    clearTimeout(timer);
    timer = setTimeout(() => (button.textContent = label), FEEDBACK_MS);
  });
  return button;
}

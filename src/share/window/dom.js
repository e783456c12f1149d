// One small helper for the window's own elements: text always goes in as text, never as HTML.

/** A new `tag` element with `className` and, when given, `text` as its content. */
export function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

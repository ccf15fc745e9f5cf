// The demo's one DOM helper, shared by the page's modules.

/** `<tag attrs…>children…</tag>`: `class`, `style` and `text` set those;
 * any other attribute is set as given (`true` as an empty one; `false`,
 * null and undefined leave it out). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "style") node.style.cssText = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

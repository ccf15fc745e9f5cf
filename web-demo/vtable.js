// A virtualised table body: of a list of any length, only the rows in (and
// near) its scroll box's view are in the DOM, between two spacer rows that
// keep the scroll height of them all. A header of 100,000 tensors or a
// million metadata keys is drawn in a few milliseconds a scroll.

import { el } from "./dom.js";

/** Rows drawn above and below those in view. */
const OVERSCAN = 12;
/** Rows drawn when the box has no height yet (hidden). */
const AT_LEAST = 24;

export class VirtualRows {
  /**
   * `scroller`: the scroll box (a fixed maximum height, `overflow: auto`)
   * holding the table whose body is `tbody`; `columns`: its column count.
   */
  constructor(scroller, tbody, columns) {
    this.scroller = scroller;
    this.tbody = tbody;
    this.columns = columns;
    this.count = 0;
    this.rowPx = 0; // measured from the first row drawn
    this.seq = 0;
    this.drawn = null; // { first, last }
    this.source = null;
    scroller.addEventListener("scroll", () => { this.draw().catch(() => {}); });
  }

  /**
   * Shows `count` rows: `items(from, to)` gives (or promises) the items
   * from..to, `row(item, i)` makes item i's `<tr>`. Scrolls to the top.
   * Resolves once the first rows are drawn.
   */
  set(count, items, row) {
    this.count = count;
    this.source = { items, row };
    this.drawn = null;
    this.seq++;
    this.tbody.replaceChildren();
    this.scroller.scrollTop = 0;
    return this.draw();
  }

  spacer(rows) {
    return el("tr", { class: "vspacer", "aria-hidden": "true", style: `height:${rows * (this.rowPx || 28)}px` },
      el("td", { colspan: this.columns }));
  }

  async draw() {
    if (!this.source) return;
    const px = this.rowPx || 28;
    const view = Math.max(AT_LEAST, Math.ceil(this.scroller.clientHeight / px));
    const first = Math.max(0, Math.min(Math.floor(this.scroller.scrollTop / px) - OVERSCAN, this.count - view - OVERSCAN));
    const last = Math.min(this.count, first + view + 2 * OVERSCAN);
    if (this.drawn && this.drawn.first === first && this.drawn.last === last) return;
    const seq = ++this.seq;
    const { items, row } = this.source;
    const got = await items(first, last);
    if (seq !== this.seq) return; // a later scroll is being drawn
    const rows = got.map((item, k) => row(item, first + k));
    this.tbody.replaceChildren(...(first > 0 ? [this.spacer(first)] : []), ...rows,
      ...(last < this.count ? [this.spacer(this.count - last)] : []));
    this.drawn = { first, last };
    if (!this.rowPx && rows.length) {
      const h = rows[0].getBoundingClientRect().height;
      if (h > 0) {
        this.rowPx = h;
        this.drawn = null;
        await this.draw(); // the spacers at the measured height
      }
    }
  }
}

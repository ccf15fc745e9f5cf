// The plan panel: a plan's text read by the core, drawn as bands of its
// fields and padding per alternative, a table of its fields (each shown in
// the layout panel on request) and its WGSL.

import { state, $, MAX_BYTES, announce, messageOf } from "./page.js";
import { el } from "./dom.js";
import { showInLayout } from "./layout-panel.js";

const FIELD_HUES = [210, 28, 140, 330, 265, 95, 0, 185, 50, 300];

export function updatePlan() {
  const errorBox = $("plan-error");
  let plan;
  try {
    // The core's text form, read by the core: the plan's name on the first
    // line, then `name dtype length…` per field and `union` between alternatives.
    plan = state.wasm.Plan.fromText($("plan-text").value);
  } catch (err) {
    errorBox.textContent = messageOf(err);
    errorBox.hidden = false;
    $("plan").classList.add("has-error");
    return; // the last good plan stays drawn, dimmed
  }
  errorBox.textContent = "";
  errorBox.hidden = true;
  $("plan").classList.remove("has-error");
  state.plan?.free?.();
  state.plan = plan;
  drawPlan(plan);
}

function drawPlan(plan) {
  const nbytes = Number(plan.nbytes);
  const alternatives = Number(plan.alternatives);
  const fields = Array.from(plan.fields(), (f) => ({
    ...f, offset: Number(f.offset), nbytes: Number(f.nbytes), alternative: Number(f.alternative),
    shape: Array.from(f.shape, Number),
  }));
  $("plan-summary").textContent = `${nbytes} bytes, aligned to ${plan.align}, ${fields.length} field${fields.length === 1 ? "" : "s"} `
    + `in ${alternatives} alternative${alternatives === 1 ? "" : "s"} over the same bytes.`;

  const bands = $("plan-bands");
  bands.replaceChildren();
  const pct = (x) => (nbytes ? (x / nbytes) * 100 : 0);
  const hueOf = new Map(fields.map((f, i) => [f.name, FIELD_HUES[i % FIELD_HUES.length]]));
  const described = [];
  for (let a = 0; a < alternatives; a++) {
    const lane = el("div", { class: "lane", "data-testid": `plan-lane-${a}` });
    const mine = fields.filter((f) => f.alternative === a);
    for (const f of mine) {
      const box = el("div", {
        class: "band", style: `left:${pct(f.offset)}%;width:${pct(f.nbytes)}%;--hue:${hueOf.get(f.name)}`,
        title: `${f.name}: ${f.dtype} (${f.shape.join(", ")}), bytes ${f.offset}..${f.offset + f.nbytes}`,
        "data-testid": `plan-band-${f.name}`,
      }, el("span", { text: f.name }));
      lane.append(box);
    }
    const padding = Array.from(plan.padding(a), ([s, e]) => [Number(s), Number(e)]);
    for (const [s, e] of padding) {
      lane.append(el("div", {
        class: "pad", style: `left:${pct(s)}%;width:${pct(e - s)}%`,
        title: `padding: bytes ${s}..${e}`, "data-testid": `plan-pad-${a}-${s}`,
      }));
    }
    bands.append(el("div", { class: "lane-row" },
      el("span", { class: "lane-label", text: `alternative ${a}` }), lane));
    described.push(`alternative ${a}: ${mine.map((f) => `${f.name} at ${f.offset}..${f.offset + f.nbytes}`).join(", ")}`
      + (padding.length ? `; padding ${padding.map(([s, e]) => `${s}..${e}`).join(", ")}` : ""));
  }
  // A scale with a tick every 2^k bytes, at most about 12 of them.
  let step = 1;
  while (nbytes / step > 12) step *= 2;
  const scale = el("div", { class: "scale", "aria-hidden": "true" });
  for (let x = 0; x <= nbytes; x += step) scale.append(el("span", { style: `left:${pct(x)}%`, text: String(x) }));
  bands.append(el("div", { class: "lane-row" }, el("span", { class: "lane-label", text: "byte" }), scale));
  bands.setAttribute("aria-label", `Plan of ${nbytes} bytes. ${described.join(". ")}.`);

  const tbody = $("plan-fields").querySelector("tbody");
  tbody.replaceChildren();
  for (const f of fields) {
    const button = el("button", { type: "button", class: "small", "aria-label": `Show ${f.name} in the layout panel`, text: "Show in layout" });
    button.addEventListener("click", () => showInLayout(f));
    tbody.append(el("tr", { "data-testid": `plan-field-${f.name}` },
      el("th", { scope: "row" }, el("span", { class: "swatch", style: `--hue:${hueOf.get(f.name)}`, "aria-hidden": "true" }), f.name),
      el("td", {}, el("code", { text: f.dtype })),
      el("td", { text: `(${f.shape.join(", ")}${f.shape.length === 1 ? "," : ""})` }),
      el("td", { text: `${f.offset}..${f.offset + f.nbytes}` }),
      el("td", { text: String(f.alternative) }),
      el("td", {}, button)));
  }

  const wgsl = $("plan-wgsl");
  try {
    wgsl.textContent = plan.wgsl();
    wgsl.classList.remove("note");
  } catch (err) {
    wgsl.textContent = `No WGSL for this plan: ${messageOf(err)}`;
    wgsl.classList.add("note");
  }
  updatePlanFit();
}

export function updatePlanFit() {
  const button = $("plan-fit");
  if (!state.plan || !state.buf) return;
  const need = Number(state.plan.nbytes);
  button.textContent = need === state.buf.nbytes
    ? `The buffer holds exactly the plan's ${need} bytes`
    : `Resize the buffer to the plan's ${need} bytes`;
  button.disabled = need === state.buf.nbytes || need > MAX_BYTES;
}

/** `resizeTo` is buffer.js's, given by the page: buffer.js imports this
 * module (a new buffer updates the fit button), so the two do not import each other. */
export function wirePlan(resizeTo) {
  $("plan-form").addEventListener("input", updatePlan);
  $("plan-form").addEventListener("submit", (e) => e.preventDefault());
  $("plan-fit").addEventListener("click", () => {
    const need = Number(state.plan.nbytes);
    resizeTo(need);
    announce(`The buffer now holds ${need} bytes, as the plan needs`);
  });
}

// Charts drawn as inline SVG by the page's own script: visits per day as stacked bars
// (people, bots above) with a value axis and the range's dates, and top values as sorted
// bars with their values written beside them. Every bar takes the keyboard's focus with
// its figures as its label, and every chart has a table or its labels as text, so
// nothing depends on colour.

import { el } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

function svg(name, attributes, children) {
  const element = document.createElementNS(SVG, name);
  Object.entries(attributes || {}).forEach(([key, value]) => element.setAttribute(key, value));
  (children || []).forEach((child) => element.append(child));
  return element;
}

function svgText(text, attributes) {
  const element = svg("text", attributes);
  element.textContent = text;
  return element;
}

// A round step for an axis up to `max`: 1, 2, 5 times a power of ten.
function tick(max) {
  const rough = max / 4;
  const power = 10 ** Math.floor(Math.log10(Math.max(rough, 1)));
  const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= rough) || power;
  return Math.max(1, step);
}

export function dayChart(days, title) {
  const width = 600, height = 190, left = 36, top = 10, bottom = 24;
  const peak = Math.max(1, ...days.map((day) => day.visits + day.bots));
  const step = tick(peak);
  const max = Math.ceil(peak / step) * step;
  const inner = width - left;
  const slot = inner / Math.max(1, days.length);
  const scale = (height - top - bottom) / max;
  const base = height - bottom;
  const axis = [];
  for (let value = 0; value <= max; value += step) {
    const y = base - value * scale;
    axis.push(svg("line", { class: "grid", x1: left, x2: width, y1: y, y2: y }));
    axis.push(svgText(String(value), { x: left - 4, y: y + 4, "text-anchor": "end" }));
  }
  const bars = days.map((day, index) => {
    const x = left + index * slot + slot * 0.15;
    const w = slot * 0.7;
    const people = day.visits * scale;
    const bots = day.bots * scale;
    const label = `${day.date}: ${day.visits} people, ${day.bots} bots`;
    return svg("g", { tabindex: "0", role: "img", "aria-label": label }, [
      svg("title", {}, [document.createTextNode(label)]),
      svg("rect", { class: "people", x, y: base - people, width: w, height: people }),
      svg("rect", { class: "bots", x, y: base - people - bots, width: w, height: bots }),
    ]);
  });
  const first = days.length ? days[0].date : "";
  const last = days.length ? days[days.length - 1].date : "";
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "group", "aria-label": title }, [
    ...axis,
    svg("line", { class: "axis", x1: left, x2: width, y1: base, y2: base }),
    ...bars,
    svgText(first, { x: left, y: height - 6 }),
    svgText(last, { x: width, y: height - 6, "text-anchor": "end" }),
  ]);
  const legend = el("p", { class: "legend" }, [
    el("span", { class: "swatch people" }), " people ",
    el("span", { class: "swatch bots hatched" }), " bots (stacked above people)",
  ]);
  const rows = days.map((day) => el("tr", {}, [
    el("th", { scope: "row", text: day.date }),
    el("td", { text: String(day.visits) }),
    el("td", { text: String(day.bots) }),
  ]));
  const table = el("details", { class: "as-table" }, [
    el("summary", { text: "The same as a table" }),
    el("table", {}, [
      el("caption", { class: "visually-hidden", text: title }),
      el("thead", {}, [el("tr", {}, [
        el("th", { scope: "col", text: "Day" }), el("th", { scope: "col", text: "People" }),
        el("th", { scope: "col", text: "Bots" })])]),
      el("tbody", {}, rows),
    ]),
  ]);
  return el("div", {}, [legend, chart, table]);
}

// Sorted bars, each with its value written at its end. `values`: [{ value, visits }];
// `link(value)` may give a bar's label an address.
export function barChart(values, what) {
  if (!values.length) return el("p", { class: "empty", text: `No ${what} counted yet.` });
  const sorted = [...values].sort((a, b) => b.visits - a.visits);
  const width = 300, row = 24;
  const max = Math.max(1, ...sorted.map((value) => value.visits));
  const bars = sorted.map((value, index) => {
    const y = index * row;
    const label = `${value.value}: ${value.visits}`;
    return svg("g", { tabindex: "0", role: "img", "aria-label": label }, [
      svg("title", {}, [document.createTextNode(label)]),
      svg("rect", { class: "track", x: 0, y: y + 15, width: width - 40, height: 6 }),
      svg("rect", { class: "value", x: 0, y: y + 15, width: (value.visits / max) * (width - 40), height: 6 }),
      svgText(value.value, { x: 0, y: y + 12 }),
      svgText(String(value.visits), { x: width, y: y + 21, "text-anchor": "end" }),
    ]);
  });
  return svg("svg", { viewBox: `0 0 ${width} ${sorted.length * row + 4}`, role: "group", "aria-label": what }, bars);
}

// A link's redirect rules as an editor: rules added, removed and moved up or down, each
// with its conditions (a type, then the values that type allows), and a URL or a split
// of weighted variants. Every input carries the API's name for it
// (`rules[2].conditions[0].value`), so a problem is said next to the input it names.

import { el, button, field, localInput, instant } from "./dom.js";

// The allowed values of the types that have a list (as the OpenAPI document says).
const CHOICES = {
  device: ["mobile", "tablet", "desktop", "bot"],
  os: ["android", "ios", "windows", "macos", "linux", "chromeos"],
  browser: ["chrome", "firefox", "safari", "edge", "opera", "samsung", "ie"],
};
const TYPES = {
  device: "Device", os: "Operating system", browser: "Browser", language: "Language",
  country: "Country", query: "Query parameter", after: "At or after", before: "Before",
  network: "Network (CIDR)",
};
const HINTS = {
  language: "fr or fr-CH", country: "ISO 3166, e.g. FR", network: "e.g. 203.0.113.0/24",
};
const STATUSES = [["", "The link's"], ["301", "301"], ["302", "302"], ["307", "307"], ["308", "308"]];

let rules = [];
let container = null;

function select(options, value) {
  const element = el("select", {}, options.map(([v, text]) => el("option", { value: v, text })));
  element.value = value;
  return element;
}

// An input bound to `object[key]`, named `name` for problems.
function bind(input, name, read) {
  input.dataset.field = name;
  input.addEventListener("input", () => read(input));
  input.addEventListener("change", () => read(input));
  return input;
}

function conditionItem(rule, r, condition, c) {
  const base = `rules[${r}].conditions[${c}]`;
  const id = `rule-${r}-cond-${c}`;
  const type = bind(select(Object.entries(TYPES), condition.type), `${base}.type`, (input) => {
    condition.type = input.value;
    condition.value = CHOICES[input.value] ? CHOICES[input.value][0] : "";
    delete condition.key;
    draw(`${id}-value`);
  });
  const parts = [field(`${id}-type`, `Condition ${c + 1} of rule ${r + 1}`, type)];
  if (condition.type === "query") {
    const key = bind(el("input", { type: "text", value: condition.key || "", spellcheck: "false" }),
      `${base}.key`, (input) => { condition.key = input.value; });
    parts.push(field(`${id}-key`, "Parameter", key));
  }
  let value;
  if (CHOICES[condition.type]) {
    value = select(CHOICES[condition.type].map((v) => [v, v]), condition.value);
  } else if (condition.type === "after" || condition.type === "before") {
    value = el("input", { type: "datetime-local", value: localInput(condition.value) });
  } else {
    value = el("input", { type: "text", value: condition.value || "", spellcheck: "false" });
  }
  bind(value, `${base}.value`, (input) => {
    condition.value = input.type === "datetime-local" ? instant(input.value) || input.value : input.value;
  });
  const hint = condition.type === "query" ? "empty: any value" : HINTS[condition.type];
  parts.push(field(`${id}-value`, "Value", value, hint));
  parts.push(button("Remove condition", () => {
    rule.conditions.splice(c, 1);
    draw(`rule-${r}-add-condition`);
  }, { "aria-label": `Remove condition ${c + 1} of rule ${r + 1}` }));
  return el("li", { class: "condition" }, parts);
}

function targetPart(rule, r) {
  const id = `rule-${r}`;
  const kind = bind(select([["url", "One URL"], ["split", "A split (A/B test)"]], rule.split ? "split" : "url"),
    `rules[${r}].kind`, (input) => {
      if (input.value === "split") {
        rule.split = [{ url: rule.url || "", weight: 50 }, { url: "", weight: 50 }];
        delete rule.url;
      } else {
        rule.url = rule.split && rule.split[0] ? rule.split[0].url : "";
        delete rule.split;
      }
      draw(`${id}-kind`);
    });
  const parts = [field(`${id}-kind`, "Sends to", kind)];
  if (!rule.split) {
    const url = bind(el("input", { type: "url", value: rule.url || "", spellcheck: "false" }),
      `rules[${r}].url`, (input) => { rule.url = input.value; });
    parts.push(field(`${id}-url`, "URL", url));
    return parts;
  }
  const variants = rule.split.map((variant, v) => {
    const vid = `${id}-split-${v}`;
    const url = bind(el("input", { type: "url", value: variant.url, spellcheck: "false" }),
      `rules[${r}].split[${v}].url`, (input) => { variant.url = input.value; });
    const weight = bind(el("input", { type: "number", min: "1", max: "10000", step: "1", value: String(variant.weight) }),
      `rules[${r}].split[${v}].weight`, (input) => { variant.weight = Number(input.value); });
    return el("li", { class: "variant" }, [
      field(`${vid}-url`, `Variant ${v + 1} URL`, url),
      field(`${vid}-weight`, "Weight", weight, "1 to 10000"),
      button("Remove variant", () => { rule.split.splice(v, 1); draw(`${id}-add-variant`); },
        { "aria-label": `Remove variant ${v + 1} of rule ${r + 1}` }),
    ]);
  });
  const split = el("ol", { class: "variants", "data-field": `rules[${r}].split`, id: `${id}-split` }, variants);
  parts.push(split, el("p", { class: "error", id: `${id}-split-error`, role: "alert" }),
    button("Add variant", () => { rule.split.push({ url: "", weight: 50 }); draw(`${id}-split-${rule.split.length - 1}-url`); },
      { id: `${id}-add-variant` }));
  return parts;
}

function ruleItem(rule, r) {
  const id = `rule-${r}`;
  const name = bind(el("input", { type: "text", value: rule.name || "", spellcheck: "false" }),
    `rules[${r}].name`, (input) => { rule.name = input.value; });
  const status = bind(select(STATUSES, rule.redirect_status ? String(rule.redirect_status) : ""),
    `rules[${r}].redirect_status`, (input) => { rule.redirect_status = input.value ? Number(input.value) : undefined; });
  const conditions = el("ol", { class: "conditions" }, rule.conditions.map((c, i) => conditionItem(rule, r, c, i)));
  const move = (to) => {
    rules.splice(to, 0, rules.splice(r, 1)[0]);
    draw(`rule-${to}-${to < r ? "up" : "down"}`);
  };
  return el("li", { class: "rule" }, [
    el("fieldset", { id, "data-field": `rules[${r}]` }, [
      el("legend", { text: `Rule ${r + 1}` }),
      el("p", { class: "error", id: `${id}-error`, role: "alert" }),
      field(`${id}-name`, "Name", name, "optional; counts its visits by it"),
      el("p", { class: "hint", text: rule.conditions.length ? "When all of these hold:" : "No condition: every visit." }),
      conditions,
      button("Add condition", () => {
        rule.conditions.push({ type: "device", value: "mobile" });
        draw(`rule-${r}-cond-${rule.conditions.length - 1}-type`);
      }, { id: `${id}-add-condition`, "aria-label": `Add a condition to rule ${r + 1}` }),
      ...targetPart(rule, r),
      field(`${id}-status`, "Redirect status", status),
      el("div", { class: "row" }, [
        button("Move up", () => move(r - 1), { id: `${id}-up`, disabled: r === 0, "aria-label": `Move rule ${r + 1} up` }),
        button("Move down", () => move(r + 1), { id: `${id}-down`, disabled: r === rules.length - 1, "aria-label": `Move rule ${r + 1} down` }),
        button("Remove rule", () => { rules.splice(r, 1); draw("add-rule"); }, { "aria-label": `Remove rule ${r + 1}` }),
      ]),
    ]),
  ]);
}

// Draws the rules again, then moves the focus to `focus` (an id) when it exists.
function draw(focus) {
  container.replaceChildren(
    rules.length ? el("ol", { class: "rules-editor" }, rules.map(ruleItem))
      : el("p", { class: "hint", text: "No rules: every visit goes to the link's URL." }),
  );
  // A move to the top or bottom disables the button it came from: the other one.
  let target = focus && document.getElementById(focus);
  if (target && target.disabled) target = document.getElementById(focus.replace(/(up|down)$/, (d) => (d === "up" ? "down" : "up")));
  if (target && !target.disabled) target.focus();
}

export function edit(root, linkRules) {
  container = root;
  rules = JSON.parse(JSON.stringify(linkRules || []));
  draw(null);
}

export function addRule() {
  rules.push({ conditions: [{ type: "device", value: "mobile" }], url: "" });
  draw(`rule-${rules.length - 1}-name`);
}

// The rules being edited, as the API takes them.
export function value() {
  return normalize(rules);
}

// Rules as the API takes them, their fields in one order (to compare two lists).
export function normalize(list) {
  return (list || []).map((rule) => {
    const out = {};
    if (rule.name) out.name = rule.name;
    out.conditions = rule.conditions.map((condition) => {
      if (condition.type !== "query") return { type: condition.type, value: condition.value };
      const query = { type: "query", key: condition.key || "" };
      if (condition.value) query.value = condition.value;
      return query;
    });
    if (rule.split) out.split = rule.split.map((v) => ({ url: v.url, weight: v.weight }));
    else out.url = rule.url;
    if (rule.redirect_status) out.redirect_status = rule.redirect_status;
    return out;
  });
}

// shortener's page: creates links through the public API, shows problems next to the
// field they name, counts down a 429's Retry-After, and lists the caller's links when
// the server has the list endpoint and an API key is given. No framework, no build step.
"use strict";

const FIELDS = ["url", "domain", "alias", "expires_at", "max_visits", "tags", "api_key"];
const KEY_STORAGE = "shortener.api_key";

const $ = (id) => document.getElementById(id);

function setError(field, message) {
  const input = $(field);
  const slot = $(`${field}-error`) || $("form-error");
  slot.textContent = message || "";
  if (input) {
    if (message) {
      input.setAttribute("aria-invalid", "true");
    } else {
      input.removeAttribute("aria-invalid");
    }
  }
}

function clearErrors() {
  FIELDS.forEach((field) => setError(field, ""));
  $("form-error").textContent = "";
}

// A problem's detail starts with the field it is about ("url: must be ..."); the
// X-API-Key header belongs to the API key field.
function fieldOf(detail) {
  const head = (detail || "").split(":", 1)[0].trim().toLowerCase();
  if (head === "x-api-key") return "api_key";
  return FIELDS.includes(head) ? head : null;
}

function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

function headers(json) {
  const result = {};
  if (json) result["content-type"] = "application/json";
  const key = apiKey();
  if (key) result["x-api-key"] = key;
  return result;
}

// `RateLimit: "create";r=42;t=7` -> 42
function remaining(response) {
  const header = response.headers.get("ratelimit") || "";
  const match = /;\s*r=(\d+)/.exec(header);
  return match ? Number(match[1]) : null;
}

let countdown = null;

function showLimit(response) {
  const left = remaining(response);
  if (response.status === 429) {
    let seconds = Math.max(1, Number(response.headers.get("retry-after")) || 1);
    const button = $("submit");
    button.disabled = true;
    clearInterval(countdown);
    const tick = () => {
      if (seconds <= 0) {
        clearInterval(countdown);
        button.disabled = false;
        $("limit").textContent = "You can create links again.";
        return;
      }
      $("limit").textContent =
        `Too many new links for now: try again in ${seconds} s` +
        (left === null ? "." : ` (${left} left in this window).`);
      seconds -= 1;
    };
    tick();
    countdown = setInterval(tick, 1000);
  } else if (left !== null) {
    $("limit").textContent = `${left} more link${left === 1 ? "" : "s"} before the limit.`;
  }
}

function body() {
  const form = $("create");
  const data = { url: form.url.value.trim() };
  if (!$("domain-field").hidden && form.domain.value) data.domain = form.domain.value;
  const alias = form.alias.value.trim();
  if (alias) data.alias = alias;
  if (form.expires_at.value) {
    const when = new Date(form.expires_at.value);
    if (Number.isNaN(when.getTime())) {
      throw { field: "expires_at", message: "expires_at: not a date and time" };
    }
    data.expires_at = when.toISOString().replace(/\.\d{3}Z$/, "Z");
  }
  if (form.max_visits.value) {
    data.max_visits = Number(form.max_visits.value);
  }
  const tags = splitTags(form.tags.value);
  if (tags.length) data.tags = tags;
  return data;
}

// A link's path under the API, on its domain.
function linkPath(link, rest) {
  return `/api/v1/links/${encodeURIComponent(link.code)}${rest}` +
    `${rest.includes("?") ? "&" : "?"}domain=${encodeURIComponent(link.domain)}`;
}

// The domain choice, shown only when the service serves more than one.
async function loadDomains() {
  let list;
  try {
    const response = await fetch("/api/v1/domains");
    if (!response.ok) return;
    list = (await response.json()).domains || [];
  } catch (error) {
    return;
  }
  if (list.length < 2) return;
  const select = $("domain");
  list.forEach((domain) => {
    const option = document.createElement("option");
    option.value = domain.host;
    option.textContent = domain.default ? `${domain.host} (default)` : domain.host;
    select.append(option);
  });
  $("domain-field").hidden = false;
}

// Tags as typed: separated by commas, which no tag holds.
function splitTags(text) {
  return text.split(",").map((tag) => tag.trim()).filter((tag) => tag);
}

async function create(event) {
  event.preventDefault();
  clearErrors();
  let data;
  try {
    data = body();
  } catch (problem) {
    setError(problem.field, problem.message);
    return;
  }
  if (!data.url) {
    setError("url", "url: is required");
    $("url").focus();
    return;
  }
  const button = $("submit");
  button.disabled = true;
  let response;
  try {
    response = await fetch("/api/v1/links", {
      method: "POST",
      headers: headers(true),
      body: JSON.stringify(data),
    });
  } catch (error) {
    $("form-error").textContent = "The server could not be reached. Check your connection and try again.";
    button.disabled = false;
    return;
  }
  button.disabled = false;
  showLimit(response);
  if (response.status === 201) {
    const link = await response.json();
    showResult(link);
    refreshMine();
    return;
  }
  let problem = {};
  try {
    problem = await response.json();
  } catch (error) {
    problem = { detail: `the server answered ${response.status}` };
  }
  if (response.status === 429) return;
  const field = fieldOf(problem.detail);
  if (field) {
    setError(field, problem.detail);
    if (field !== "url" && field !== "api_key") $("create").querySelector("details").open = true;
    $(field).focus();
  } else {
    $("form-error").textContent = problem.detail || `The server answered ${response.status}.`;
  }
}

function showResult(link) {
  const anchor = $("short-url");
  anchor.href = link.short_url;
  anchor.textContent = link.short_url;
  $("target").textContent = link.url;
  $("copied").textContent = "";
  $("result").hidden = false;
  anchor.focus();
  showQr(link);
}

// The QR code is fetched with the API key (a link made with a key is only that key's),
// and shown from a blob: URL, which the Content-Security-Policy allows for images.
let qrUrl = null;

async function showQr(link) {
  const image = $("qr");
  image.hidden = true;
  if (qrUrl) URL.revokeObjectURL(qrUrl);
  qrUrl = null;
  try {
    const response = await fetch(
      linkPath(link, "/qr?format=svg&size=160"),
      { headers: headers(false) },
    );
    if (!response.ok) return;
    qrUrl = URL.createObjectURL(await response.blob());
  } catch (error) {
    return;
  }
  image.src = qrUrl;
  image.alt = `QR code of ${link.short_url}`;
  image.hidden = false;
}

async function copy(text, status) {
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = "Copied.";
  } catch (error) {
    status.textContent = "Select the link and copy it.";
  }
}

// The list endpoint may not exist on this server: the table stays hidden unless it
// answers with items. Only the latest refresh is shown: an earlier one answering late
// (a filter typed and changed quickly) is dropped.
let refreshes = 0;
async function refreshMine() {
  const mine = ++refreshes;
  const latest = () => mine === refreshes;
  const section = $("mine");
  if (!apiKey()) {
    section.hidden = true;
    return;
  }
  const filter = splitTags($("tag-filter").value);
  const query = filter.map((tag) => `&tag=${encodeURIComponent(tag)}`).join("");
  $("tag-filter-error").textContent = "";
  let response;
  try {
    response = await fetch(`/api/v1/links?limit=50${query}`, { headers: headers(false) });
  } catch (error) {
    if (latest()) section.hidden = true;
    return;
  }
  if (!latest()) return;
  if (response.status === 400) {
    // A tag the filter cannot hold: said under the filter, the table kept as it was.
    const problem = await response.json().catch(() => ({}));
    $("tag-filter-error").textContent = problem.detail || "This filter is not accepted.";
    return;
  }
  if (response.status === 401 || response.status === 403) {
    setError("api_key", "X-API-Key: this key is not accepted");
    section.hidden = true;
    return;
  }
  const list = response.ok ? await response.json().catch(() => null) : null;
  if (!latest()) return;
  if (!list || !Array.isArray(list.items)) {
    section.hidden = true;
    return;
  }
  const rows = $("mine-rows");
  rows.replaceChildren(...list.items.map(row));
  section.hidden = false;
}

function row(link) {
  const tr = document.createElement("tr");
  const short = document.createElement("td");
  const anchor = document.createElement("a");
  anchor.href = link.short_url;
  anchor.textContent = link.short_url;
  short.append(anchor);
  const target = document.createElement("td");
  target.textContent = link.url;
  // Each tag shows the links that have it.
  const tags = document.createElement("td");
  (link.tags || []).forEach((tag) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "tag";
    button.textContent = tag;
    button.setAttribute("aria-label", `Show links tagged ${tag}`);
    button.addEventListener("click", () => {
      $("tag-filter").value = tag;
      refreshMine();
    });
    tags.append(button, " ");
  });
  const visits = document.createElement("td");
  visits.textContent = String(link.visits);
  const actions = document.createElement("td");
  const status = document.createElement("span");
  status.className = "status";
  status.setAttribute("aria-live", "polite");
  const copyButton = document.createElement("button");
  copyButton.type = "button";
  copyButton.textContent = "Copy";
  copyButton.setAttribute("aria-label", `Copy ${link.short_url}`);
  copyButton.addEventListener("click", () => copy(link.short_url, status));
  const deleteButton = document.createElement("button");
  deleteButton.type = "button";
  deleteButton.textContent = "Delete";
  deleteButton.setAttribute("aria-label", `Delete ${link.short_url}`);
  deleteButton.addEventListener("click", async () => {
    const response = await fetch(linkPath(link, ""), {
      method: "DELETE",
      headers: headers(false),
    });
    if (response.status === 204) {
      refreshMine();
    } else {
      const problem = await response.json().catch(() => ({}));
      status.textContent = problem.detail || `The server answered ${response.status}.`;
    }
  });
  const statsButton = document.createElement("button");
  statsButton.type = "button";
  statsButton.textContent = "Visits";
  statsButton.setAttribute("aria-label", `Visits of ${link.short_url}`);
  statsButton.addEventListener("click", () => showStats(link));
  actions.append(copyButton, " ", statsButton, " ", deleteButton, " ", status);
  tr.append(short, target, tags, visits, actions);
  return tr;
}

// A link's visits: per day (people and bots stacked) and the top referrers, countries,
// browsers and devices, drawn as inline SVG. Each bar group is focusable and labelled with
// its values, and each top value is written out beside its bar.
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

function dayChart(days) {
  const width = 600, height = 160, top = 16, bottom = 20;
  const max = Math.max(1, ...days.map((day) => day.visits + day.bots));
  const step = width / days.length;
  const scale = (height - top - bottom) / max;
  const bars = days.map((day, index) => {
    const x = index * step + step * 0.1;
    const w = step * 0.8;
    const people = day.visits * scale;
    const bots = day.bots * scale;
    const base = height - bottom;
    const label = `${day.date}: ${day.visits} people, ${day.bots} bots`;
    return svg("g", { tabindex: "0", role: "img", "aria-label": label }, [
      svg("title", {}, [document.createTextNode(label)]),
      svg("rect", { class: "people", x, y: base - people, width: w, height: people }),
      svg("rect", { class: "bots", x, y: base - people - bots, width: w, height: bots }),
    ]);
  });
  const first = days.length ? days[0].date : "";
  const last = days.length ? days[days.length - 1].date : "";
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "group", "aria-label": "Visits per day" }, [
    svgText(`max ${max}`, { x: 0, y: 12 }),
    ...bars,
    svgText(first, { x: 0, y: height - 4 }),
    svgText(last, { x: width, y: height - 4, "text-anchor": "end" }),
  ]);
}

function topChart(values, what) {
  if (!values.length) {
    const empty = document.createElement("p");
    empty.className = "empty";
    empty.textContent = `No ${what} counted yet.`;
    return empty;
  }
  const width = 300, row = 22;
  const max = Math.max(1, ...values.map((value) => value.visits));
  const bars = values.map((value, index) => {
    const y = index * row;
    const label = `${value.value}: ${value.visits}`;
    return svg("g", { tabindex: "0", role: "img", "aria-label": label }, [
      svg("title", {}, [document.createTextNode(label)]),
      svg("rect", { class: "value", x: 0, y: y + 14, width: (value.visits / max) * (width - 40), height: 5 }),
      svgText(value.value, { x: 0, y: y + 11 }),
      svgText(String(value.visits), { x: width, y: y + 11, "text-anchor": "end" }),
    ]);
  });
  return svg("svg", { viewBox: `0 0 ${width} ${values.length * row}`, role: "group", "aria-label": what }, bars);
}

// A link's redirect rules, read-only: each as its conditions in words and where it sends.
const CONDITION_WORDS = {
  device: "device is", os: "OS is", browser: "browser is", language: "accepts language",
  country: "country is", after: "from", before: "before", network: "address in",
};

function conditionText(condition) {
  if (condition.type === "query") {
    return condition.value === undefined
      ? `query has ${condition.key}`
      : `query ${condition.key} is "${condition.value}"`;
  }
  return `${CONDITION_WORDS[condition.type] || condition.type} ${condition.value}`;
}

function ruleItem(rule, index) {
  const item = document.createElement("li");
  const name = rule.name || `rules[${index}]`;
  const when = rule.conditions.length ? rule.conditions.map(conditionText).join(" and ") : "every visit";
  let where;
  if (rule.split) {
    const total = rule.split.reduce((sum, variant) => sum + variant.weight, 0);
    where = rule.split
      .map((variant) => `${variant.url} (${Math.round((variant.weight / total) * 1000) / 10}%)`)
      .join(", ");
    where = `a split: ${where}`;
  } else {
    where = rule.url;
  }
  const status = rule.redirect_status ? ` with ${rule.redirect_status}` : "";
  item.textContent = `${name}: when ${when}, to ${where}${status}`;
  return item;
}

let statsShown = 0;
async function showStats(link) {
  const shown = ++statsShown;
  const section = $("stats");
  $("stats-title").textContent = `Visits of ${link.short_url}`;
  $("stats-status").textContent = "Loading…";
  ["days", "referrer", "country", "browser", "device", "rules", "rule", "variant"]
    .forEach((part) => $(`stats-${part}`).replaceChildren());
  const rules = link.rules || [];
  $("stats-rules-part").hidden = rules.length === 0;
  $("stats-rules").replaceChildren(...rules.map(ruleItem));
  section.hidden = false;
  $("stats-title").focus();
  const get = async (by) => {
    const response = await fetch(linkPath(link, `/visits?by=${by}&limit=8`), { headers: headers(false) });
    if (!response.ok) {
      const problem = await response.json().catch(() => ({}));
      throw new Error(problem.detail || `The server answered ${response.status}.`);
    }
    return response.json();
  };
  const dimensions = ["referrer", "country", "browser", "device"];
  if (rules.length) dimensions.push("rule", "variant");
  let answers;
  try {
    answers = await Promise.all(dimensions.map(get));
  } catch (error) {
    if (shown === statsShown) $("stats-status").textContent = error.message;
    return;
  }
  if (shown !== statsShown) return;
  $("stats-status").textContent = "";
  $("stats-days").replaceChildren(dayChart(answers[0].days));
  const words = { referrer: "referrers", country: "countries", browser: "browsers", device: "devices",
    rule: "rules", variant: "variants" };
  dimensions.forEach((by, index) => $(`stats-${by}`).replaceChildren(topChart(answers[index].values || [], words[by])));
}

document.addEventListener("DOMContentLoaded", () => {
  $("stats-close").addEventListener("click", () => {
    $("stats").hidden = true;
  });
  const keyInput = $("api_key");
  keyInput.value = apiKey();
  keyInput.addEventListener("change", () => {
    const key = keyInput.value.trim();
    if (key) {
      sessionStorage.setItem(KEY_STORAGE, key);
    } else {
      sessionStorage.removeItem(KEY_STORAGE);
    }
    setError("api_key", "");
    refreshMine();
  });
  FIELDS.forEach((field) => $(field).addEventListener("input", () => setError(field, "")));
  $("create").addEventListener("submit", create);
  $("filter").addEventListener("submit", (event) => {
    event.preventDefault();
    refreshMine();
  });
  $("copy").addEventListener("click", () => copy($("short-url").href, $("copied")));
  loadDomains();
  refreshMine();
});

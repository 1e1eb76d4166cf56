// shortener's page: creates links through the public API, shows problems next to the
// field they name and counts down a 429's Retry-After; with an API key, the console
// (console/main.js) opens the rest. ES modules, no framework, no build step.

import { $, copy, splitTags } from "./console/dom.js";
import { apiKey, headers, showQr } from "./console/api.js";
import * as consoleViews from "./console/main.js";

const FIELDS = ["url", "domain", "alias", "expires_at", "max_visits", "tags", "api_key"];

export function setError(field, message) {
  const input = $(field);
  const slot = $(`${field}-error`) || $("form-error");
  slot.textContent = message || "";
  if (input) {
    if (message) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
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

// `RateLimit: "create";r=42;t=7` -> 42
function remaining(response) {
  const match = /;\s*r=(\d+)/.exec(response.headers.get("ratelimit") || "");
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
  if (form.max_visits.value) data.max_visits = Number(form.max_visits.value);
  const tags = splitTags(form.tags.value);
  if (tags.length) data.tags = tags;
  return data;
}

// The domain choice, shown only when the service serves more than one.
export function offerDomains(list) {
  if (list.length < 2) return;
  const select = $("domain");
  select.replaceChildren();
  list.forEach((domain) => {
    const option = document.createElement("option");
    option.value = domain.host;
    option.textContent = domain.default ? `${domain.host} (default)` : domain.host;
    select.append(option);
  });
  $("domain-field").hidden = false;
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
      headers: headers("application/json"),
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
    showResult(await response.json());
    consoleViews.linkMade();
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
  showQr($("qr"), link);
}

function start() {
  const keyInput = $("api_key");
  keyInput.value = apiKey();
  keyInput.addEventListener("change", () => {
    setError("api_key", "");
    consoleViews.useKey(keyInput.value.trim());
  });
  FIELDS.forEach((field) => $(field).addEventListener("input", () => setError(field, "")));
  $("create").addEventListener("submit", create);
  $("copy").addEventListener("click", () => copy($("short-url").href, $("copied")));
  consoleViews.start({ offerDomains, setError });
}

// Modules run once the document is parsed.
start();

// A link's page: every field the API edits (sent as a JSON merge patch of what changed),
// its redirect rules' editor, the password set or cleared, delete after a confirmation,
// its QR code, and its visits (visits.js). A 400 is said next to the field it names.

import { $, copy, confirmDialog, showProblem, clearProblems, splitTags, localInput, instant } from "./dom.js";
import { call, get, linkPath, showQr } from "./api.js";
import { announceNext } from "./links.js";
import * as rules from "./rules.js";
import * as visits from "./visits.js";

let link = null;

// The edit form's input of the API's field `name` (form.title would be the form's own).
const input = (name) => $("edit").elements.namedItem(name);

// The form's fields by the API's names, each read as the API takes it.
const FIELDS = {
  url: (v) => v.trim(),
  title: (v) => v.trim() || null,
  expires_at: (v) => (v ? instant(v) || v : null),
  max_visits: (v) => (v === "" ? null : Number(v)),
  expired_url: (v) => v.trim() || null,
  redirect_status: (v) => (v === "" ? null : Number(v)),
  forward_query: (v) => (v === "" ? null : v === "true"),
};

function fill() {
  input("url").value = link.url;
  input("title").value = link.title || "";
  input("tags").value = (link.tags || []).join(", ");
  input("expires_at").value = localInput(link.expires_at);
  input("max_visits").value = link.max_visits ?? "";
  input("expired_url").value = link.expired_url || "";
  input("redirect_status").value = link.redirect_status ? String(link.redirect_status) : "";
  input("forward_query").value = link.forward_query === undefined ? "" : String(link.forward_query);
  input("crawlable").checked = !!link.crawlable;
  input("password").value = "";
  input("password_clear").checked = false;
  $("password-clear-field").hidden = !link.password_protected;
  $("password-state").textContent = link.password_protected
    ? "Visitors must give a password." : "Open to every visitor.";
  rules.edit($("rules-editor"), link.rules);
}

// What changed since the link was read, as a merge patch.
function patch() {
  const out = {};
  const was = {
    url: link.url, title: link.title || null, expires_at: link.expires_at || null,
    max_visits: link.max_visits ?? null, expired_url: link.expired_url || null,
    redirect_status: link.redirect_status ?? null, forward_query: link.forward_query ?? null,
  };
  Object.entries(FIELDS).forEach(([name, read]) => {
    const value = read(input(name).value);
    const before = name === "expires_at" && was.expires_at ? instant(localInput(was.expires_at)) : was[name];
    if (value !== before) out[name] = value;
  });
  const tags = splitTags(input("tags").value).map((tag) => tag.toLowerCase());
  if (JSON.stringify(tags) !== JSON.stringify(link.tags || [])) out.tags = tags;
  if (input("crawlable").checked !== !!link.crawlable) out.crawlable = input("crawlable").checked;
  if (input("password").value) out.password = input("password").value;
  else if (input("password_clear").checked) out.password = null;
  const newRules = rules.value();
  if (JSON.stringify(newRules) !== JSON.stringify(rules.normalize(link.rules))) out.rules = newRules.length ? newRules : null;
  return out;
}

async function save(event) {
  event.preventDefault();
  const form = $("edit");
  clearProblems(form);
  const changes = patch();
  if (!Object.keys(changes).length) {
    $("edit-status").textContent = "Nothing changed.";
    return;
  }
  $("edit-status").textContent = "Saving…";
  const answer = await call("PATCH", linkPath(link, ""), changes, "application/merge-patch+json");
  if (!answer.ok) {
    $("edit-status").textContent = "Not saved.";
    const at = showProblem(form, answer.body.detail, $("edit-error"));
    if (at) at.focus();
    else $("edit-error").focus();
    return;
  }
  link = answer.body;
  fill();
  showHeader();
  $("edit-status").textContent = `Saved ${Object.keys(changes).join(", ")}.`;
}

async function remove() {
  if (!await confirmDialog(`Delete ${link.short_url}? Its visits go with it; this cannot be undone.`, "Delete")) return;
  const answer = await call("DELETE", linkPath(link, ""));
  if (!answer.ok) {
    $("link-status").textContent = answer.body.detail;
    return;
  }
  announceNext(`Deleted ${link.short_url}.`);
  location.hash = "#/links";
}

function showHeader() {
  $("link-title").textContent = link.title ? `${link.title}` : `Link ${link.code}`;
  const anchor = $("link-short");
  anchor.href = link.short_url;
  anchor.textContent = link.short_url;
  $("link-facts").textContent =
    `Made ${new Date(link.created_at).toLocaleString()}; ${link.visits} visit${link.visits === 1 ? "" : "s"} in all.`;
}

export function setup() {
  $("edit").addEventListener("submit", save);
  $("link-delete").addEventListener("click", remove);
  $("link-copy").addEventListener("click", () => copy(link.short_url, $("link-copied")));
  $("add-rule").addEventListener("click", rules.addRule);
  $("edit").addEventListener("input", (event) => {
    const changed = event.target;
    if (changed.getAttribute("aria-invalid")) {
      changed.removeAttribute("aria-invalid");
      const slot = $(`${changed.id}-error`);
      if (slot) slot.textContent = "";
    }
  });
  visits.setup(() => link);
}

// The route #/links/{code}?domain=host.
export async function show(code, params) {
  $("link-status").textContent = "Loading…";
  $("link-body").hidden = true;
  const domain = params.get("domain");
  const answer = await get(`/api/v1/links/${encodeURIComponent(code)}${domain !== null ? `?domain=${encodeURIComponent(domain)}` : ""}`);
  if (!answer.ok) {
    $("link-title").textContent = `Link ${code}`;
    $("link-status").textContent = answer.body.detail;
    return answer.status !== 401;
  }
  link = answer.body;
  $("link-status").textContent = "";
  clearProblems($("edit"));
  $("edit-status").textContent = "";
  showHeader();
  fill();
  $("link-body").hidden = false;
  showQr($("link-qr"), link);
  visits.show();
  return true;
}


// The links list: search (code, URL, title), filters by tag and domain, the order, pages
// through the whole list with the cursor (back and forth), and a selection of links for
// bulk delete (after a confirmation) or bulk tagging (each selected link's tags patched).

import { $, el, button, copy, confirmDialog, showProblem, clearProblems, splitTags } from "./dom.js";
import { call, get, linkPath } from "./api.js";

// The page's state: its query, the cursors of the pages before (to go back) and the
// current one, and the links shown with which are selected.
const state = { cursors: [], cursor: null, items: [], selected: new Set(), next: null };
let loads = 0;
// What the next load says instead of its page (a link deleted from its own page).
let pending = null;

export function announceNext(message) {
  pending = message;
}

const keyOf = (link) => `${link.domain}/${link.code}`;

export function linkHref(link) {
  return `#/links/${encodeURIComponent(link.code)}?domain=${encodeURIComponent(link.domain)}`;
}

function query() {
  const params = new URLSearchParams();
  params.set("limit", $("page-size").value);
  const q = $("q").value.trim();
  if (q) params.set("q", q);
  splitTags($("tag-filter").value).forEach((tag) => params.append("tag", tag));
  if ($("domain-filter").value) params.set("domain", $("domain-filter").value);
  // Only a chosen order is sent: the service's default is newest first.
  if ($("order").value === "visits") params.set("order", "visits");
  if (state.cursor) params.set("cursor", state.cursor);
  return `/api/v1/links?${params}`;
}

// Loads the current page; answers whether the key was accepted.
export async function load(announce) {
  const mine = ++loads;
  clearProblems($("filter"));
  $("list-error").textContent = "";
  const answer = await get(query());
  if (mine !== loads) return true;
  if (answer.status === 401 || answer.status === 403) return false;
  if (!answer.ok) {
    // The filter's inputs carry the API's names (q, tag, domain, order, limit).
    showProblem($("filter"), answer.body.detail, $("list-error"));
    return true;
  }
  state.items = answer.body.items;
  state.next = answer.body.next_cursor;
  state.selected.clear();
  render();
  const page = state.cursors.length + 1;
  const count = state.items.length;
  $("list-status").textContent = pending || (announce === false ? "" :
    `Page ${page}: ${count} link${count === 1 ? "" : "s"}${state.next ? ", more on the next page" : ""}.`);
  pending = null;
  return true;
}

function render() {
  $("mine-rows").replaceChildren(...state.items.map(row));
  $("page-number").textContent = `Page ${state.cursors.length + 1}`;
  $("previous-page").disabled = state.cursors.length === 0;
  $("next-page").disabled = !state.next;
  $("list-empty").hidden = state.items.length > 0;
  updateSelection();
}

function row(link) {
  const short = el("a", { href: link.short_url, text: link.short_url });
  const check = el("input", { type: "checkbox", "aria-label": `Select ${link.short_url}`, class: "select" });
  check.checked = state.selected.has(keyOf(link));
  check.addEventListener("change", () => {
    if (check.checked) state.selected.add(keyOf(link));
    else state.selected.delete(keyOf(link));
    updateSelection();
  });
  const tags = el("td", { class: "tags" });
  (link.tags || []).forEach((tag) => {
    tags.append(button(tag, () => filterBy({ tag }), { class: "tag", "aria-label": `Show links tagged ${tag}` }), " ");
  });
  const status = el("span", { class: "status", "aria-live": "polite" });
  const actions = el("td", { class: "actions" }, [
    button("Copy", () => copy(link.short_url, status), { "aria-label": `Copy ${link.short_url}` }), " ",
    el("a", { href: linkHref(link), class: "button", text: "Edit and visits", "aria-label": `Edit and visits of ${link.short_url}` }), " ",
    button("Delete", () => remove([link], status), { "aria-label": `Delete ${link.short_url}` }), " ",
    status,
  ]);
  const title = link.title ? el("span", { class: "hint", text: ` ${link.title}` }) : "";
  return el("tr", {}, [
    el("td", {}, [check]),
    el("td", {}, [short, title]),
    el("td", { class: "target", text: link.url }),
    tags,
    el("td", { class: "number", text: String(link.visits) }),
    actions,
  ]);
}

function updateSelection() {
  const count = state.selected.size;
  $("selected-count").textContent = `${count} selected`;
  $("bulk-delete").disabled = count === 0;
  $("bulk-tag").disabled = count === 0;
  const all = $("select-all");
  all.checked = count > 0 && count === state.items.length;
  all.indeterminate = count > 0 && count < state.items.length;
}

function selectedLinks() {
  return state.items.filter((link) => state.selected.has(keyOf(link)));
}

async function remove(links, status) {
  const what = links.length === 1 ? links[0].short_url : `${links.length} links`;
  if (!await confirmDialog(`Delete ${what}? Its visits go with it; this cannot be undone.`, "Delete")) return;
  let deleted = 0;
  for (const link of links) {
    const answer = await call("DELETE", linkPath(link, ""));
    if (!answer.ok && answer.status !== 404) {
      status.textContent = `${link.short_url}: ${answer.body.detail}`;
      break;
    }
    deleted += 1;
  }
  await load(false);
  $("list-status").textContent = `Deleted ${deleted} link${deleted === 1 ? "" : "s"}.`;
  if (deleted && status.isConnected) status.textContent = "";
}

async function tagSelected() {
  const input = $("bulk-tags");
  clearProblems($("bulk"));
  const add = splitTags(input.value).map((tag) => tag.toLowerCase());
  if (!add.length) {
    showProblem($("bulk"), "tags: type one or more tags, separated by commas", null);
    input.focus();
    return;
  }
  let tagged = 0;
  for (const link of selectedLinks()) {
    const tags = [...new Set([...(link.tags || []), ...add])];
    const answer = await call("PATCH", linkPath(link, ""), { tags }, "application/merge-patch+json");
    if (!answer.ok) {
      showProblem($("bulk"), `tags: ${link.short_url}: ${answer.body.detail}`, $("bulk-error"));
      input.focus();
      break;
    }
    tagged += 1;
  }
  await load(false);
  $("list-status").textContent = `Tagged ${tagged} link${tagged === 1 ? "" : "s"}.`;
}

// Shows the list filtered as asked (from a tag or domain elsewhere), from its first page.
export function filterBy(filters) {
  $("q").value = filters.q || "";
  $("tag-filter").value = filters.tag || "";
  $("domain-filter").value = filters.domain || "";
  firstPage();
  if (location.hash.startsWith("#/links") || !location.hash.startsWith("#/")) return;
  location.hash = "#/links";
}

function firstPage() {
  state.cursors = [];
  state.cursor = null;
  load();
}

export function fillDomains(domains) {
  const select = $("domain-filter");
  select.replaceChildren(el("option", { value: "", text: "Every domain" }),
    ...domains.map((domain) => el("option", { value: domain.host, text: domain.host })));
}

export function setup() {
  $("filter").addEventListener("submit", (event) => {
    event.preventDefault();
    firstPage();
  });
  $("order").addEventListener("change", firstPage);
  $("page-size").addEventListener("change", firstPage);
  $("next-page").addEventListener("click", () => {
    state.cursors.push(state.cursor);
    state.cursor = state.next;
    load();
  });
  $("previous-page").addEventListener("click", () => {
    state.cursor = state.cursors.pop() || null;
    load();
  });
  $("select-all").addEventListener("change", () => {
    state.items.forEach((link) => {
      if ($("select-all").checked) state.selected.add(keyOf(link));
      else state.selected.delete(keyOf(link));
    });
    $("mine-rows").querySelectorAll("input.select").forEach((box) => { box.checked = $("select-all").checked; });
    updateSelection();
  });
  $("bulk-delete").addEventListener("click", () => remove(selectedLinks(), $("bulk-error")));
  $("bulk-tag").addEventListener("click", tagSelected);
}

// The route #/links?tag=…&domain=…&q=… sets the filters.
export function show(params) {
  if (params.has("tag") || params.has("domain") || params.has("q")) {
    $("q").value = params.get("q") || "";
    $("tag-filter").value = params.get("tag") || "";
    $("domain-filter").value = params.get("domain") || "";
    state.cursors = [];
    state.cursor = null;
  }
  return load(false);
}

// The console: a pasted API key opens views reachable from the nav by hash routes
// (#/overview, #/links, #/links/{code}?domain=…, #/tags, #/domains, #/keys with admin
// scope); without a key, only the create form shows. Each view's heading takes the focus
// when it opens, and each says its results in a live region.

import { $ } from "./dom.js";
import { apiKey, setApiKey, get } from "./api.js";
import * as links from "./links.js";
import * as link from "./link.js";
import * as overview from "./overview.js";
import * as tags from "./tags.js";
import * as domains from "./domains.js";
import * as keys from "./keys.js";

let page = null;
let keyed = false;
let admin = false;
let served = [];
let routed = 0;

function closeConsole(message) {
  keyed = false;
  admin = false;
  $("console-nav").hidden = true;
  if (message) page.setError("api_key", message);
  route(false);
}

// Takes `key` (from the form's field): kept in this tab, and the console opens when the
// API lists links with it.
export async function useKey(key) {
  setApiKey(key);
  if (!key) {
    closeConsole(null);
    return;
  }
  const answer = await get("/api/v1/links?limit=1");
  if (answer.status === 401 || answer.status === 403) {
    closeConsole("X-API-Key: this key is not accepted for listing links");
    return;
  }
  if (!answer.ok) return;
  keyed = true;
  $("console-nav").hidden = false;
  admin = await keys.allowed();
  $("nav-keys").hidden = !admin;
  route(false);
}

export function linkMade() {
  if (keyed && !$("mine").hidden) links.load(false);
}

// The view of the hash: [name, rest of the path, query].
function parse() {
  const hash = location.hash.startsWith("#/") ? location.hash.slice(2) : "";
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter((part) => part).map(decodeURIComponent);
  let name = parts[0] || "home";
  if (name === "links" && parts[1]) name = "link";
  return [name, parts[1], new URLSearchParams(query || "")];
}

async function route(focus) {
  if (location.hash && !location.hash.startsWith("#/")) return;
  const mine = ++routed;
  let [name, code, params] = parse();
  const known = ["home", "overview", "links", "link", "tags", "domains", "keys"];
  if (!keyed || !known.includes(name) || (name === "keys" && !admin)) name = "home";
  document.querySelectorAll("[data-view]").forEach((part) => {
    part.hidden = !part.dataset.view.split(" ").includes(name) || (part.id === "mine" && !keyed);
  });
  document.querySelectorAll("#console-nav a").forEach((anchor) => {
    const to = anchor.getAttribute("href").slice(2) || "home";
    if (to === (name === "link" ? "links" : name)) anchor.setAttribute("aria-current", "page");
    else anchor.removeAttribute("aria-current");
  });
  if (name !== "keys") keys.hide();
  if (focus && name !== "home") {
    const heading = document.querySelector(`[data-view~="${name}"] h2`);
    if (heading) heading.focus();
  }
  if (!keyed) return;
  let accepted = true;
  if (name === "home" || name === "links") accepted = await links.show(params);
  else if (name === "link") accepted = await link.show(code, params);
  else if (name === "overview") accepted = await overview.show();
  else if (name === "tags") accepted = await tags.show();
  else if (name === "domains") accepted = await domains.show(served);
  else if (name === "keys") accepted = await keys.show();
  if (mine === routed && accepted === false) closeConsole("X-API-Key: this key is no longer accepted");
}

export async function start(pageHooks) {
  page = pageHooks;
  links.setup();
  link.setup();
  tags.setup();
  keys.setup();
  window.addEventListener("hashchange", () => route(true));
  served = await domains.load();
  page.offerDomains(served);
  links.fillDomains(served);
  if (apiKey()) await useKey(apiKey());
  else route(false);
}

// Domains: the hosts the service serves, the default first, each with its links (the
// links list filtered by it), how many the key has there, and its fallbacks (where `/`
// and an unknown code send visitors instead of the page and the 404).

import { $, el } from "./dom.js";
import { get, walk } from "./api.js";

export async function show(domains) {
  const rows = await Promise.all(domains.map(async (domain) => {
    const list = await walk(`/api/v1/links?limit=100&domain=${encodeURIComponent(domain.host)}`, 10);
    const count = !list.ok ? "?" : list.complete ? String(list.items.length) : `${list.items.length} or more`;
    const visits = list.ok ? list.items.reduce((sum, link) => sum + link.visits, 0) : 0;
    return el("tr", {}, [
      el("th", { scope: "row", text: domain.host }),
      el("td", { text: domain.default ? "default" : "" }),
      el("td", { class: "number" }, [el("a", { href: `#/links?domain=${encodeURIComponent(domain.host)}`,
        text: count, "aria-label": `${count} links on ${domain.host}` })]),
      el("td", { class: "number", text: String(visits) }),
      el("td", {}, fallbacks(domain)),
    ]);
  }));
  $("domains-rows").replaceChildren(...rows);
  $("domains-status").textContent = `${domains.length} domain${domains.length === 1 ? "" : "s"}.`;
  return true;
}

export async function load() {
  const answer = await get("/api/v1/domains");
  return answer.ok ? answer.body.domains || [] : [];
}

// A domain's fallbacks in words, each target as text (never a link the console follows).
function fallbacks(domain) {
  const lines = [];
  if (domain.root_redirect) lines.push(`/ goes to ${domain.root_redirect}`);
  if (domain.not_found_url) lines.push(`unknown codes go to ${domain.not_found_url}`);
  if (lines.length === 0) return [el("span", { text: "none" })];
  return lines.map((line) => el("span", { class: "fallback", text: line }));
}

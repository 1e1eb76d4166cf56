// API keys (for a key with admin scope): make one (its secret shown once, with a copy
// button), list every key with its last use (the config file's read-only), and revoke a
// stored one after a confirmation.

import { $, el, button, copy, confirmDialog, showProblem, clearProblems, instant, when } from "./dom.js";
import { call, get } from "./api.js";

// Whether the key in use may manage keys: GET /api/v1/keys answers 200.
export async function allowed() {
  return (await get("/api/v1/keys")).ok;
}

function row(key) {
  const status = el("span", { class: "status", "aria-live": "polite" });
  let action;
  if (key.source === "config") {
    action = el("span", { class: "hint", text: "read-only (config file)" });
  } else if (key.revoked_at) {
    action = el("span", { class: "hint", text: `revoked ${when(key.revoked_at)}` });
  } else {
    action = button("Revoke", async () => {
      if (!await confirmDialog(`Revoke the key ${key.name}? Every node refuses it within a second.`, "Revoke")) return;
      const answer = await call("DELETE", `/api/v1/keys/${encodeURIComponent(key.name)}`);
      if (!answer.ok) {
        status.textContent = answer.body.detail;
        return;
      }
      await show();
      $("keys-status").textContent = `Revoked ${key.name}.`;
    }, { "aria-label": `Revoke ${key.name}` });
  }
  return el("tr", { "data-key": key.name }, [
    el("th", { scope: "row", text: key.name }),
    el("td", { text: key.scopes.join(", ") }),
    el("td", { text: key.owner || "" }),
    el("td", { text: key.expires_at ? when(key.expires_at) : "never" }),
    el("td", { text: key.last_used_at ? when(key.last_used_at) : "not yet" }),
    el("td", {}, [action, " ", status]),
  ]);
}

async function make(event) {
  event.preventDefault();
  const form = $("new-key");
  clearProblems(form);
  $("key-made").hidden = true;
  const body = { name: $("key-name").value.trim() };
  body.scopes = [...form.querySelectorAll("input[name='scope']:checked")].map((box) => box.value);
  const owner = $("key-owner").value.trim();
  if (owner) body.owner = owner;
  if ($("key-expires_at").value) body.expires_at = instant($("key-expires_at").value) || $("key-expires_at").value;
  const answer = await call("POST", "/api/v1/keys", body);
  if (!answer.ok) {
    const at = showProblem(form, answer.body.detail, $("new-key-error"));
    if (at) at.focus();
    return;
  }
  $("key-secret").value = answer.body.secret;
  $("key-copied").textContent = "";
  $("key-made").hidden = false;
  $("key-secret").focus();
  form.reset();
  await show();
  $("keys-status").textContent = `Made ${answer.body.key.name}: copy its secret now, it is shown this once.`;
}

export async function show() {
  const answer = await get("/api/v1/keys");
  if (!answer.ok) {
    $("keys-status").textContent = answer.body.detail;
    return answer.status !== 401;
  }
  $("keys-rows").replaceChildren(...answer.body.keys.map(row));
  $("keys-status").textContent = `${answer.body.keys.length} keys.`;
  return true;
}

// Leaving the view forgets the secret: it is shown once.
export function hide() {
  $("key-secret").value = "";
  $("key-made").hidden = true;
}

export function setup() {
  $("new-key").addEventListener("submit", make);
  $("key-copy").addEventListener("click", () => copy($("key-secret").value, $("key-copied")));
}

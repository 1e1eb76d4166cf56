// Tags: each with how many links have it and their visits; renamed (on every link that
// has it, merging into a tag of that name) or deleted, each after a confirmation, with one
// API call; a tag's name leads to the links list filtered by it.

import { $, el, button, confirmDialog, showProblem, clearProblems } from "./dom.js";
import { call, get } from "./api.js";

function tagPath(tag) {
  return `/api/v1/tags/${encodeURIComponent(tag)}`;
}

function row(tag) {
  const status = el("span", { class: "status", "aria-live": "polite" });
  const rename = button("Rename", () => openRename(tag.tag), { "aria-label": `Rename ${tag.tag}` });
  const remove = button("Delete", async () => {
    const many = `${tag.links} link${tag.links === 1 ? "" : "s"}`;
    if (!await confirmDialog(`Take the tag ${tag.tag} off ${many}? The links stay.`, "Delete tag")) return;
    const answer = await call("DELETE", tagPath(tag.tag));
    if (!answer.ok) {
      status.textContent = answer.body.detail;
      return;
    }
    await show();
    $("tags-status").textContent = `Took ${tag.tag} off ${answer.body.links} link${answer.body.links === 1 ? "" : "s"}.`;
  }, { "aria-label": `Delete ${tag.tag}` });
  return el("tr", { "data-tag": tag.tag }, [
    el("th", { scope: "row" }, [el("a", { href: `#/links?tag=${encodeURIComponent(tag.tag)}`, text: tag.tag,
      "aria-label": `Links tagged ${tag.tag}` })]),
    el("td", { class: "number", text: String(tag.links) }),
    el("td", { class: "number", text: String(tag.visits) }),
    el("td", { class: "number", text: String(tag.bots) }),
    el("td", { class: "actions" }, [rename, " ", remove, " ", status]),
  ]);
}

let renaming = null;

function openRename(tag) {
  renaming = tag;
  const form = $("rename");
  clearProblems(form);
  $("rename-legend").textContent = `Rename ${tag}`;
  $("rename-name").value = tag;
  form.hidden = false;
  $("rename-name").focus();
}

async function rename(event) {
  event.preventDefault();
  const form = $("rename");
  clearProblems(form);
  const name = $("rename-name").value.trim();
  if (!await confirmDialog(`Rename ${renaming} to ${name} on every link that has it?`, "Rename")) return;
  const answer = await call("PATCH", tagPath(renaming), { name });
  if (!answer.ok) {
    showProblem(form, answer.body.detail, $("rename-error"));
    $("rename-name").focus();
    return;
  }
  form.hidden = true;
  await show();
  $("tags-status").textContent = `Renamed ${renaming} to ${answer.body.tag} on ${answer.body.links} link${answer.body.links === 1 ? "" : "s"}.`;
  $("tags-title").focus();
}

export async function show() {
  const answer = await get("/api/v1/tags");
  if (!answer.ok) {
    $("tags-status").textContent = answer.body.detail;
    return answer.status !== 401;
  }
  const tags = answer.body.tags;
  $("tags-rows").replaceChildren(...tags.map(row));
  $("tags-empty").hidden = tags.length > 0;
  $("tags-status").textContent = `${tags.length} tag${tags.length === 1 ? "" : "s"}.`;
  return true;
}

export function setup() {
  $("rename").addEventListener("submit", rename);
  $("rename-cancel").addEventListener("click", () => {
    $("rename").hidden = true;
    $("tags-title").focus();
  });
}

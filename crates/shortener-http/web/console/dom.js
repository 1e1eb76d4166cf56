// Small DOM helpers shared by the console's views: elements from data, problems shown
// next to the field they name, a confirmation dialog, and the clipboard.

export const $ = (id) => document.getElementById(id);

// el("a", { href: "#", text: "x" }, [child, "text"])
export function el(tag, attributes, children) {
  const element = document.createElement(tag);
  Object.entries(attributes || {}).forEach(([key, value]) => {
    if (value === undefined || value === null || value === false) return;
    if (key === "text") element.textContent = value;
    else if (key === "on") Object.entries(value).forEach(([name, f]) => element.addEventListener(name, f));
    else if (value === true) element.setAttribute(key, "");
    else element.setAttribute(key, value);
  });
  (children || []).forEach((child) => element.append(child));
  return element;
}

export function button(text, onClick, attributes) {
  return el("button", { type: "button", text, on: { click: onClick }, ...(attributes || {}) });
}

// A labelled field: its input, and the alert its problems are said in.
export function field(id, label, input, hint) {
  input.id = id;
  input.setAttribute("aria-describedby", `${id}-error`);
  const labelElement = el("label", { for: id, text: label });
  if (hint) labelElement.append(" ", el("span", { class: "hint", text: hint }));
  return el("div", { class: "field" }, [labelElement, input, el("p", { class: "error", id: `${id}-error`, role: "alert" })]);
}

// A problem's detail starts with the field it is about: "rules[2].conditions[0].value: ...".
export function fieldName(detail) {
  const match = /^\s*([A-Za-z_][\w.[\]-]*)\s*:/.exec(detail || "");
  return match ? match[1] : null;
}

// Says `detail` next to the input whose data-field is its field, or the nearest enclosing
// field ("rules[2].conditions[0]" then "rules[2]" then "rules"), else in `fallback`.
// Answers the input it was said at.
export function showProblem(scope, detail, fallback) {
  let name = fieldName(detail);
  while (name) {
    const input = scope.querySelector(`[data-field="${CSS.escape(name)}"]`);
    if (input) {
      input.setAttribute("aria-invalid", "true");
      const slot = $(`${input.id}-error`);
      if (slot) slot.textContent = detail;
      return input;
    }
    const shorter = name.replace(/(\.[^.[\]]+|\[\d+\])$/, "");
    name = shorter === name ? null : shorter;
  }
  if (fallback) fallback.textContent = detail;
  return null;
}

export function clearProblems(scope) {
  scope.querySelectorAll("[aria-invalid]").forEach((input) => input.removeAttribute("aria-invalid"));
  scope.querySelectorAll(".error").forEach((slot) => { slot.textContent = ""; });
}

// Asks in the page's <dialog>: resolves true for the confirming button, false otherwise
// (Cancel or Escape). The focus goes back where it was.
export function confirmDialog(message, yes) {
  const dialog = $("confirm");
  const back = document.activeElement;
  $("confirm-text").textContent = message;
  $("confirm-yes").textContent = yes;
  return new Promise((resolve) => {
    const done = (answer) => {
      dialog.removeEventListener("close", onClose);
      $("confirm-yes").removeEventListener("click", onYes);
      if (dialog.open) dialog.close();
      if (back && back.isConnected) back.focus();
      resolve(answer);
    };
    const onYes = () => done(true);
    const onClose = () => done(false);
    $("confirm-yes").addEventListener("click", onYes);
    dialog.addEventListener("close", onClose);
    dialog.showModal();
    $("confirm-no").focus();
  });
}

export async function copy(text, status) {
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = "Copied.";
  } catch (error) {
    status.textContent = "Select it and copy it.";
  }
}

// Tags as typed: separated by commas, which no tag holds.
export function splitTags(text) {
  return text.split(",").map((tag) => tag.trim()).filter((tag) => tag);
}

// "2026-12-01T10:00" in local time from an RFC 3339 instant, for datetime-local inputs.
export function localInput(instant) {
  if (!instant) return "";
  const date = new Date(instant);
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

// An RFC 3339 instant (UTC, whole seconds) from a datetime-local value.
export function instant(local) {
  const date = new Date(local);
  if (Number.isNaN(date.getTime())) return null;
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

export function when(instant) {
  return instant ? new Date(instant).toLocaleString() : "";
}

// The day `days` before today (UTC), YYYY-MM-DD.
export function daysAgo(days) {
  return new Date(Date.now() - days * 86400000).toISOString().slice(0, 10);
}

// The public API as the console calls it: the key from this tab's storage, JSON in and
// out, problems as { status, detail }, and a 429 anywhere said in the banner with the
// seconds left until the limit lets the next call through.

import { $ } from "./dom.js";

const KEY_STORAGE = "shortener.api_key";

export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

export function headers(json) {
  const result = {};
  if (json) result["content-type"] = json;
  const key = apiKey();
  if (key) result["x-api-key"] = key;
  return result;
}

// A link's path under the API, on its domain.
export function linkPath(link, rest) {
  return `/api/v1/links/${encodeURIComponent(link.code)}${rest}` +
    `${rest.includes("?") ? "&" : "?"}domain=${encodeURIComponent(link.domain)}`;
}

let countdown = null;

// Counts down a 429's Retry-After in the page's banner (role status).
export function showRetry(response) {
  const banner = $("retry");
  let seconds = Math.max(1, Number(response.headers.get("retry-after")) || 1);
  clearInterval(countdown);
  const tick = () => {
    if (seconds <= 0) {
      clearInterval(countdown);
      banner.textContent = "You can try again now.";
      setTimeout(() => { if (!countdown || seconds <= 0) banner.hidden = true; }, 4000);
      return;
    }
    banner.textContent = `Too many requests for now: try again in ${seconds} s.`;
    banner.hidden = false;
    seconds -= 1;
  };
  tick();
  countdown = setInterval(tick, 1000);
}

// Calls the API: answers { ok, status, body } where body is the JSON (or null), and a
// failed call's body is a problem whose detail says what went wrong.
export async function call(method, path, data, contentType) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: headers(data === undefined ? null : contentType || "application/json"),
      body: data === undefined ? undefined : JSON.stringify(data),
    });
  } catch (error) {
    return { ok: false, status: 0, body: { detail: "The server could not be reached. Check your connection and try again." } };
  }
  if (response.status === 429) showRetry(response);
  let body = null;
  if (response.status !== 204) body = await response.json().catch(() => null);
  if (!response.ok) {
    body = body && body.detail ? body : { detail: `The server answered ${response.status}.` };
    if (response.status === 429) {
      const wait = response.headers.get("retry-after");
      body = { ...body, detail: `${body.detail} Try again in ${wait || 1} s.` };
    }
  }
  return { ok: response.ok, status: response.status, body };
}

export const get = (path) => call("GET", path);

// Every page of GET path (a list with a cursor), at most `pages` pages.
export async function walk(path, pages) {
  const items = [];
  let cursor = null;
  for (let page = 0; page < pages; page += 1) {
    const answer = await get(`${path}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    if (!answer.ok) return { ...answer, items };
    items.push(...answer.body.items);
    cursor = answer.body.next_cursor;
    if (!cursor) return { ok: true, items, complete: true };
  }
  return { ok: true, items, complete: false };
}

// The blob: URL each QR image shows, released when the image gets another.
const qrUrls = new Map();

// A link's QR code in `image`: fetched with the API key (a link made with a key is only
// that key's) and shown from a blob: URL, which the Content-Security-Policy allows for
// images. Hidden when it cannot be fetched.
export async function showQr(image, link) {
  image.hidden = true;
  const previous = qrUrls.get(image);
  if (previous) URL.revokeObjectURL(previous);
  qrUrls.delete(image);
  let url;
  try {
    const response = await fetch(linkPath(link, "/qr?format=svg&size=160"), { headers: headers(null) });
    if (!response.ok) return;
    url = URL.createObjectURL(await response.blob());
  } catch (error) {
    return;
  }
  qrUrls.set(image, url);
  image.src = url;
  image.alt = `QR code of ${link.short_url}`;
  image.hidden = false;
}

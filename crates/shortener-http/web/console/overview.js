// The overview: how many links the key reaches, visits today and over the last 7 and 30
// days (people against bots, from the account-wide device counts, where bots are their
// own class), the most visited links and the top referrers of the last 30 days.

import { $, el, daysAgo } from "./dom.js";
import { get, walk } from "./api.js";
import { barChart } from "./charts.js";
import { linkHref } from "./links.js";

// Links counted through at most this many pages of 100.
const PAGES = 20;

async function period(days) {
  const answer = await get(`/api/v1/visits?by=device&limit=10&from=${daysAgo(days - 1)}&to=${daysAgo(0)}`);
  if (!answer.ok) return answer;
  const values = answer.body.values;
  const bots = values.filter((v) => v.value === "bot").reduce((sum, v) => sum + v.visits, 0);
  const all = values.reduce((sum, v) => sum + v.visits, 0);
  return { ok: true, people: all - bots, bots };
}

function figure(id, label, value) {
  return el("div", { class: "figure", id }, [el("dt", { text: label }), el("dd", { text: value })]);
}

export async function show() {
  $("overview-status").textContent = "Loading…";
  const [list, today, week, month, referrers] = await Promise.all([
    walk("/api/v1/links?limit=100", PAGES),
    period(1), period(7), period(30),
    get(`/api/v1/visits?by=referrer&limit=5&from=${daysAgo(29)}&to=${daysAgo(0)}`),
  ]);
  const failed = [list, today, week, month, referrers].find((answer) => !answer.ok);
  if (failed) {
    $("overview-status").textContent = failed.body.detail;
    return failed.status !== 401;
  }
  const links = list.items;
  const count = list.complete ? String(links.length) : `${links.length} or more`;
  const visits = (answer) => `${answer.people} people, ${answer.bots} bots`;
  $("overview-figures").replaceChildren(
    figure("figure-links", "Links", count),
    figure("figure-today", "Visits today", visits(today)),
    figure("figure-week", "Visits, last 7 days", visits(week)),
    figure("figure-month", "Visits, last 30 days", visits(month)),
  );
  const top = [...links].sort((a, b) => b.visits - a.visits).slice(0, 5).filter((link) => link.visits > 0);
  $("overview-links").replaceChildren(top.length
    ? el("ol", { class: "top-links" }, top.map((link) => el("li", {}, [
      el("a", { href: linkHref(link), text: link.title || link.short_url }),
      ` ${link.visits} visit${link.visits === 1 ? "" : "s"}`,
    ])))
    : el("p", { class: "empty", text: "No visits yet." }));
  $("overview-referrers").replaceChildren(barChart(referrers.body.values, "referrers"));
  $("overview-status").textContent =
    `${count} links; ${visits(month)} in the last 30 days.`;
  return true;
}

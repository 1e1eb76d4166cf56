// A link's visits over a chosen range (the last 7, 30 or 90 days, or between two dates):
// people and bots per day, in all, and the referrer, country, browser, OS and device
// breakdowns (rule and variant too for a link with redirect rules).

import { $, el, daysAgo } from "./dom.js";
import { get, linkPath } from "./api.js";
import { dayChart, barChart } from "./charts.js";

const WORDS = {
  referrer: "referrers", country: "countries", browser: "browsers", os: "operating systems",
  device: "devices", rule: "rules", variant: "variants",
};

let linkOf = () => null;
let shown = 0;

// The chosen range: [from, to] as YYYY-MM-DD, or a problem naming the date field.
function range() {
  const choice = document.querySelector("input[name='range']:checked").value;
  if (choice !== "dates") return { from: daysAgo(Number(choice) - 1), to: daysAgo(0), days: Number(choice) };
  const from = $("range-from").value;
  const to = $("range-to").value;
  if (!from) return { problem: "from: choose the first day", at: "range-from" };
  if (!to) return { problem: "to: choose the last day", at: "range-to" };
  return { from, to };
}

export async function show() {
  const link = linkOf();
  if (!link) return;
  const mine = ++shown;
  ["range-from", "range-to"].forEach((id) => {
    $(id).removeAttribute("aria-invalid");
    $(`${id}-error`).textContent = "";
  });
  const chosen = range();
  if (chosen.problem) {
    $(chosen.at).setAttribute("aria-invalid", "true");
    $(`${chosen.at}-error`).textContent = chosen.problem;
    return;
  }
  $("stats-status").textContent = "Loading visits…";
  const dimensions = ["referrer", "country", "browser", "os", "device"];
  const hasRules = (link.rules || []).length > 0;
  if (hasRules) dimensions.push("rule", "variant");
  $("stats-rules-part").hidden = !hasRules;
  const answers = await Promise.all(dimensions.map((by) =>
    get(linkPath(link, `/visits?by=${by}&limit=8&from=${chosen.from}&to=${chosen.to}`))));
  if (mine !== shown) return;
  const failed = answers.find((answer) => !answer.ok);
  if (failed) {
    const detail = failed.body.detail;
    const field = /^(from|to):/.exec(detail);
    if (field) {
      const id = field[1] === "from" ? "range-from" : "range-to";
      $(id).setAttribute("aria-invalid", "true");
      $(`${id}-error`).textContent = detail;
    }
    $("stats-status").textContent = detail;
    return;
  }
  const days = answers[0].body.days;
  const people = days.reduce((sum, day) => sum + day.visits, 0);
  const bots = days.reduce((sum, day) => sum + day.bots, 0);
  const span = `${days.length} day${days.length === 1 ? "" : "s"}, ${chosen.from} to ${chosen.to}`;
  $("stats-range").textContent = `Per day, ${span}`;
  $("stats-totals").replaceChildren(
    el("li", { text: `${people} visit${people === 1 ? "" : "s"} by people` }),
    el("li", { text: `${bots} by bots` }),
  );
  $("stats-days").replaceChildren(dayChart(days, `Visits per day, ${span}`));
  dimensions.forEach((by, index) => {
    $(`stats-${by}`).replaceChildren(barChart(answers[index].body.values || [], WORDS[by]));
  });
  $("stats-status").textContent = `Visits of ${span}: ${people} by people, ${bots} by bots.`;
}

export function setup(currentLink) {
  linkOf = currentLink;
  document.querySelectorAll("input[name='range']").forEach((radio) => {
    radio.addEventListener("change", () => {
      $("range-dates").hidden = radio.value !== "dates" || !radio.checked;
      if (radio.checked && radio.value !== "dates") show();
    });
  });
  $("range-form").addEventListener("submit", (event) => {
    event.preventDefault();
    show();
  });
}

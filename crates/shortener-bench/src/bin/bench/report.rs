//! Figures, their medians, and the two reports: BENCHMARKS.md and results.json.

use std::fmt::Write as _;

use serde::Serialize;
use shortener_bench::Figures;

/// What a figure counts, and so how it is printed and which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    PerSecond,
    Ms,
    Us,
    Bytes,
    Percent,
    Count,
}

impl Unit {
    pub fn format(self, value: f64) -> String {
        match self {
            _ if !value.is_finite() => "n/a".to_owned(),
            Self::PerSecond if value >= 1e6 => format!("{:.2}M/s", value / 1e6),
            Self::PerSecond if value >= 1e3 => format!("{:.1}k/s", value / 1e3),
            Self::PerSecond => format!("{value:.0}/s"),
            Self::Ms => format!("{value:.2} ms"),
            Self::Us => format!("{value:.2} us"),
            Self::Bytes => format!("{value:.0} B"),
            Self::Percent => format!("{value:.1}%"),
            Self::Count => format!("{value:.0}"),
        }
    }
}

/// One figure measured once per round; `median` is kept up to date with `values`.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub label: String,
    pub unit: Unit,
    pub median: f64,
    pub values: Vec<f64>,
}

/// The median of the finite values (the mean of the middle two for an even count), or NaN.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]),
    }
}

/// A figure of ours next to its reference (series' labels and medians): a summary row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub what: String,
    pub ours: String,
    pub ours_value: f64,
    pub reference: Option<String>,
    pub reference_value: Option<f64>,
    /// `ours / reference`: the median of the rounds' ratios when both were measured in
    /// every round (A and B of one round ran back to back, so load that drifts between
    /// rounds cancels out), else the ratio of the medians.
    pub ratio: Option<f64>,
    pub unit: Unit,
    pub higher_is_better: bool,
    pub command: String,
}

/// What one benchmark measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Section {
    /// Settings and checks a reader needs to trust the figures, one sentence each.
    pub notes: Vec<String>,
    #[serde(rename = "comparisons")]
    pub rows: Vec<Row>,
    pub series: Vec<Series>,
}

impl Section {
    /// Adds one round's `value` to the series `label` (created on first use).
    pub fn push(&mut self, label: &str, unit: Unit, value: f64) {
        match self.series.iter_mut().find(|series| series.label == label) {
            Some(series) => {
                series.values.push(value);
                series.median = median(&series.values);
            }
            None => self.series.push(Series {
                label: label.to_owned(),
                unit,
                median: median(&[value]),
                values: vec![value],
            }),
        }
    }

    /// One round of `<label> <rate>` (per second), `<label> p50` and `<label> p99`: its line.
    pub fn figures(&mut self, label: &str, rate: &str, figures: Figures) -> String {
        self.push(&format!("{label} {rate}"), Unit::PerSecond, figures.rate);
        self.push(&format!("{label} p50"), Unit::Ms, figures.p50_ms);
        self.push(&format!("{label} p99"), Unit::Ms, figures.p99_ms);
        format!("{label}: {figures}")
    }

    /// A summary row of the series `ours` against `reference` (or alone).
    pub fn compare(&mut self, what: &str, ours: &str, reference: Option<&str>, command: &str) {
        let series = |label| self.series.iter().find(|series| series.label == label);
        let values = |label| series(label).map_or(&[][..], |series| &series.values);
        let ratio = reference.map(|reference| {
            let (ours, theirs) = (values(ours), values(reference));
            let ratios: Vec<f64> = ours.iter().zip(theirs).map(|(a, b)| a / b).collect();
            if ours.len() == theirs.len() && ours.len() > 1 {
                median(&ratios)
            } else {
                median(ours) / median(theirs)
            }
        });
        let unit = series(ours).map_or(Unit::PerSecond, |it| it.unit);
        self.rows.push(Row {
            what: what.to_owned(),
            ours: ours.to_owned(),
            ours_value: median(values(ours)),
            reference: reference.map(str::to_owned),
            reference_value: reference.map(|label| median(values(label))),
            ratio: ratio.filter(|ratio| ratio.is_finite()),
            unit,
            higher_is_better: matches!(unit, Unit::PerSecond | Unit::Percent),
            command: command.to_owned(),
        });
    }

    /// [`Section::compare`] of `<ours> <figure>` with `<reference> <figure>`.
    pub fn versus(&mut self, what: &str, [ours, reference, figure]: [&str; 3], command: &str) {
        let [ours, reference] = [ours, reference].map(|label| format!("{label} {figure}"));
        self.compare(what, &ours, Some(&reference), command);
    }
}

/// One benchmark of the run, and how it ended: `done`, `skipped` (a tool is missing), `failed`.
#[derive(Debug, Serialize)]
pub struct Benchmark {
    pub name: &'static str,
    pub title: &'static str,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(flatten)]
    pub section: Option<Section>,
}

/// What the figures were measured on.
#[derive(Debug, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub rustc: String,
    pub redis: String,
    pub wrk: String,
    /// The 1, 5 and 15 minute load averages before the run: other work skews the figures.
    pub load_average: String,
}

/// Everything one run produced, as results.json has it.
#[derive(Debug, Serialize)]
pub struct Run {
    pub mode: &'static str,
    pub rounds: usize,
    pub started_at: String,
    pub seconds: f64,
    pub machine: Machine,
    pub benchmarks: Vec<Benchmark>,
}

impl Run {
    pub fn markdown(&self) -> String {
        let m = &self.machine;
        let (cpu, rustc, redis, wrk, load) = (&m.cpu, &m.rustc, &m.redis, &m.wrk, &m.load_average);
        let (mode, rounds, minutes) = (self.mode, self.rounds, self.seconds / 60.0);
        let mut out = format!(
            "# Benchmarks\n\n\
             Written by `cargo xtask bench` ({mode} run, {rounds} rounds, {minutes:.1} min) on {}.\n\
             Do not edit: run it again.\n\
             `cargo xtask bench` runs every benchmark (about 20 minutes once built) and writes this file; `--quick` (under 3 minutes) and `--only NAME` write `target/bench/` only.\n\
             Machine: cpu: {cpu}; rustc: {rustc}; redis: {redis}; wrk: {wrk}; load average (1, 5, 15 min) before the run: {load}.\n\n\
             Each comparison runs A and B alternately in the same run (A B A B ...), and every figure is the median over the rounds.\n\
             The ratio is ours / reference, the median of the rounds' ratios (A and B of a round run back to back, so load that drifts between rounds cancels out): above 1 is better for rates and accuracy, below 1 is better for latencies, costs and bytes.\n\
             Load generator and servers share the machine's cores, so absolute figures drift between runs and machines; compare ratios.\n\
             Each figure is a ratio measured side by side in one run; figures are reported here, never asserted.\n\n\
             | what | ours | reference | ratio | command |\n|---|---|---|---|---|\n",
            self.started_at,
        );
        let sections = self.benchmarks.iter().filter_map(|b| b.section.as_ref());
        for row in sections.flat_map(|section| &section.rows) {
            let cell = |label: &str, value| format!("{label}: **{}**", row.unit.format(value));
            let theirs = (row.reference.as_deref().zip(row.reference_value))
                .map_or("-".to_owned(), |(label, value)| cell(label, value));
            let ratio = (row.ratio).map_or("-".to_owned(), |ratio| format!("{ratio:.2}x"));
            let (what, ours) = (&row.what, cell(&row.ours, row.ours_value));
            let cmd = row.command.replace('|', "\\|");
            let _ = writeln!(out, "| {what} | {ours} | {theirs} | {ratio} | `{cmd}` |");
        }
        // "Where the time goes", from `perf` profiles: read, not computed, so written by hand.
        let _ = write!(out, "\n{}", include_str!("profiles.md"));
        for benchmark in &self.benchmarks {
            let (title, name) = (benchmark.title, benchmark.name);
            let _ = writeln!(out, "\n## {title} (`--only {name}`)\n");
            let Some(section) = &benchmark.section else {
                // "Skipped" or "Failed".
                let status = benchmark.status[..1].to_uppercase() + &benchmark.status[1..];
                let reason = benchmark.reason.as_deref().unwrap_or_default();
                let _ = writeln!(out, "{status}: {reason}.");
                continue;
            };
            out.extend(section.notes.iter().map(|note| format!("{note}\n")));
            out.push_str("\n| figure | median | min | max | rounds |\n|---|---|---|---|---|\n");
            for series in &section.series {
                let (label, unit, values) = (&series.label, series.unit, &series.values);
                let min = values.iter().copied().fold(f64::INFINITY, f64::min);
                let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let [median, min, max] = [series.median, min, max].map(|value| unit.format(value));
                let rounds = values.len();
                let _ = writeln!(out, "| {label} | {median} | {min} | {max} | {rounds} |");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_ignore_missing_values() {
        assert!((median(&[3.0, 1.0, 2.0]) - 2.0).abs() < f64::EPSILON);
        assert!((median(&[4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < f64::EPSILON);
        assert!((median(&[f64::NAN, 5.0]) - 5.0).abs() < f64::EPSILON);
        assert!(median(&[]).is_nan());
        // And results.json has no NaN.
        let mut section = Section::default();
        section.push("x", Unit::Ms, f64::NAN);
        let json = serde_json::to_value(&section).unwrap();
        assert_eq!(json["series"][0]["unit"], "ms");
        assert!(json["series"][0]["median"].is_null());
        assert_eq!(Unit::PerSecond.format(212_345.0), "212.3k/s");
        assert_eq!(Unit::Ms.format(f64::NAN), "n/a");
    }

    #[test]
    fn ratios_are_medians_of_the_rounds_ratios() {
        let mut section = Section::default();
        // Rounds pair up: a slow round slows both, and the ratio stays.
        for (ours, theirs) in [(10.0, 5.0), (1.0, 1.0), (10.0, 5.0)] {
            section.push("a x", Unit::PerSecond, ours);
            section.push("b x", Unit::PerSecond, theirs);
        }
        section.versus("a vs b", ["a", "b", "x"], "cmd");
        assert_eq!(section.rows[0].ratio, Some(2.0));
        assert_eq!(section.rows[0].reference.as_deref(), Some("b x"));
        // Measured once: the ratio of the medians; fewer bytes are better.
        section.push("alone", Unit::Bytes, 72.0);
        section.push("pair", Unit::Bytes, 104.0);
        section.compare("alone vs pair", "alone", Some("pair"), "cmd");
        assert!((section.rows[1].ratio.unwrap() - 72.0 / 104.0).abs() < 1e-12);
        assert!(!section.rows[1].higher_is_better);
    }
}

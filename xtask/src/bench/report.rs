//! Figures, their medians, and the two reports: docs/BENCHMARKS.md and results.json.

use std::fmt::Write as _;

use super::json::Json;

/// What a figure counts, and so how it is printed and which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    PerSecond,
    Millis,
    Micros,
    Bytes,
    Percent,
    Count,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Self::PerSecond => "per_second",
            Self::Millis => "ms",
            Self::Micros => "us",
            Self::Bytes => "bytes",
            Self::Percent => "percent",
            Self::Count => "count",
        }
    }

    pub fn format(self, value: f64) -> String {
        if !value.is_finite() {
            return "n/a".to_owned();
        }
        match self {
            Self::PerSecond if value >= 1e6 => format!("{:.2}M/s", value / 1e6),
            Self::PerSecond if value >= 1e3 => format!("{:.1}k/s", value / 1e3),
            Self::PerSecond => format!("{value:.0}/s"),
            Self::Millis => format!("{value:.2} ms"),
            Self::Micros => format!("{value:.2} us"),
            Self::Bytes => format!("{value:.0} B"),
            Self::Percent => format!("{value:.1}%"),
            Self::Count => format!("{value:.0}"),
        }
    }

    /// Whether a higher figure is the better one (throughput, accuracy).
    fn higher_is_better(self) -> bool {
        matches!(self, Self::PerSecond | Self::Percent)
    }
}

/// One figure measured once per round.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub unit: Unit,
    pub values: Vec<f64>,
}

impl Series {
    pub fn new(label: impl Into<String>, unit: Unit) -> Self {
        Self {
            label: label.into(),
            unit,
            values: Vec::new(),
        }
    }

    pub fn median(&self) -> f64 {
        median(&self.values)
    }
}

/// The median (mean of the middle two for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values
        .iter()
        .copied()
        .filter(|value| value.is_finite())
        .collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        f64::midpoint(sorted[middle - 1], sorted[middle])
    }
}

/// A figure of ours next to its reference, as one line of the summary table.
#[derive(Debug, Clone)]
pub struct Row {
    pub what: String,
    /// A series' label and median.
    pub ours: (String, f64),
    pub reference: Option<(String, f64)>,
    /// `ours / reference`: the median of the rounds' ratios when both were measured in
    /// every round (A and B of one round ran back to back, so load that drifts between
    /// rounds cancels out), else the ratio of the medians.
    pub ratio: Option<f64>,
    pub unit: Unit,
    pub command: String,
}

impl Row {
    pub fn ratio(&self) -> Option<f64> {
        self.ratio
    }
}

/// What one benchmark measured.
#[derive(Debug, Clone, Default)]
pub struct Section {
    pub rows: Vec<Row>,
    pub series: Vec<Series>,
    /// Settings and checks a reader needs to trust the figures, one sentence each.
    pub notes: Vec<String>,
}

impl Section {
    /// The series labelled `label`, created on first use.
    pub fn series(&mut self, label: &str, unit: Unit) -> &mut Series {
        if let Some(index) = self.series.iter().position(|series| series.label == label) {
            return &mut self.series[index];
        }
        self.series.push(Series::new(label, unit));
        self.series.last_mut().expect("just pushed")
    }

    pub fn median(&self, label: &str) -> f64 {
        self.series
            .iter()
            .find(|series| series.label == label)
            .map_or(f64::NAN, Series::median)
    }

    /// A summary row comparing the medians of two series (`reference: None` for a figure alone).
    pub fn compare(&mut self, what: &str, ours: &str, reference: Option<&str>, command: &str) {
        let unit = self
            .series
            .iter()
            .find(|series| series.label == ours)
            .map_or(Unit::PerSecond, |series| series.unit);
        let values = |label: &str| {
            self.series
                .iter()
                .find(|series| series.label == label)
                .map(|series| series.values.clone())
                .unwrap_or_default()
        };
        let ratio = reference.and_then(|reference| {
            let (ours, theirs) = (values(ours), values(reference));
            let ratio = if ours.len() == theirs.len() && ours.len() > 1 {
                median(
                    &ours
                        .iter()
                        .zip(&theirs)
                        .map(|(ours, theirs)| ours / theirs)
                        .collect::<Vec<_>>(),
                )
            } else {
                median(&ours) / median(&theirs)
            };
            ratio.is_finite().then_some(ratio)
        });
        let row = Row {
            what: what.to_owned(),
            ours: (ours.to_owned(), self.median(ours)),
            reference: reference.map(|label| (label.to_owned(), self.median(label))),
            ratio,
            unit,
            command: command.to_owned(),
        };
        self.rows.push(row);
    }
}

/// How a benchmark ended.
#[derive(Debug)]
pub enum Outcome {
    Done(Section),
    Skipped(String),
    Failed(String),
}

/// Everything one `cargo xtask bench` run produced.
#[derive(Debug)]
pub struct Run {
    pub mode: &'static str,
    pub rounds: usize,
    pub started_at: String,
    pub seconds: f64,
    pub machine: Vec<(&'static str, String)>,
    pub benchmarks: Vec<(&'static str, &'static str, Outcome)>,
}

impl Run {
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let minutes = self.seconds / 60.0;
        let _ = writeln!(out, "# Benchmarks\n");
        let _ = writeln!(
            out,
            "Written by `cargo xtask bench` ({} run, {} rounds, {minutes:.1} min) on {}.",
            self.mode, self.rounds, self.started_at
        );
        let _ = writeln!(out, "Do not edit: run it again.");
        let _ = writeln!(
            out,
            "`cargo xtask bench` runs every benchmark (about 11 minutes once built) and writes this file; `--quick` (under 2 minutes) and `--only NAME` write `target/bench/` only."
        );
        let _ = writeln!(
            out,
            "Machine: {}.\n",
            self.machine
                .iter()
                .map(|(key, value)| format!("{key}: {value}"))
                .collect::<Vec<_>>()
                .join("; ")
        );
        out.push_str(
            "Each comparison runs A and B alternately in the same run (A B A B ...), and every figure is the median over the rounds.\n\
             The ratio is ours / reference, the median of the rounds' ratios (A and B of a round run back to back, so load that drifts between rounds cancels out): above 1 is better for rates and accuracy, below 1 is better for latencies, costs and bytes.\n\
             Load generator and servers share the machine's cores, so absolute figures drift between runs and machines; compare ratios.\n\
             Each figure is a ratio measured side by side in one run; figures are reported here, never asserted.\n\n",
        );
        out.push_str("| what | ours | reference | ratio | command |\n|---|---|---|---|---|\n");
        for (_, _, outcome) in &self.benchmarks {
            if let Outcome::Done(section) = outcome {
                for row in &section.rows {
                    let reference = row.reference.as_ref().map_or_else(
                        || "-".to_owned(),
                        |(label, value)| cell(label, *value, row.unit),
                    );
                    let ratio = row
                        .ratio()
                        .map_or_else(|| "-".to_owned(), |ratio| format!("{ratio:.2}x"));
                    let _ = writeln!(
                        out,
                        "| {} | {} | {reference} | {ratio} | `{}` |",
                        row.what,
                        cell(&row.ours.0, row.ours.1, row.unit),
                        row.command.replace('|', "\\|")
                    );
                }
            }
        }
        for (name, title, outcome) in &self.benchmarks {
            let _ = writeln!(out, "\n## {title} (`--only {name}`)\n");
            match outcome {
                Outcome::Skipped(why) => {
                    let _ = writeln!(out, "Skipped: {why}.");
                }
                Outcome::Failed(why) => {
                    let _ = writeln!(out, "Failed: {why}.");
                }
                Outcome::Done(section) => {
                    for note in &section.notes {
                        let _ = writeln!(out, "{note}");
                    }
                    out.push_str(
                        "\n| figure | median | min | max | rounds |\n|---|---|---|---|---|\n",
                    );
                    for series in &section.series {
                        let lowest = series.values.iter().copied().fold(f64::INFINITY, f64::min);
                        let highest = series
                            .values
                            .iter()
                            .copied()
                            .fold(f64::NEG_INFINITY, f64::max);
                        let _ = writeln!(
                            out,
                            "| {} | {} | {} | {} | {} |",
                            series.label,
                            series.unit.format(series.median()),
                            series.unit.format(lowest),
                            series.unit.format(highest),
                            series.values.len()
                        );
                    }
                }
            }
        }
        out
    }

    pub fn json(&self) -> Json {
        let benchmarks = self
            .benchmarks
            .iter()
            .map(|(name, title, outcome)| {
                let mut fields = vec![("name", Json::from(*name)), ("title", Json::from(*title))];
                match outcome {
                    Outcome::Skipped(why) => fields.extend([
                        ("status", Json::from("skipped")),
                        ("reason", Json::from(why.as_str())),
                    ]),
                    Outcome::Failed(why) => fields.extend([
                        ("status", Json::from("failed")),
                        ("reason", Json::from(why.as_str())),
                    ]),
                    Outcome::Done(section) => {
                        fields.push(("status", Json::from("done")));
                        fields.push((
                            "notes",
                            Json::Array(
                                section
                                    .notes
                                    .iter()
                                    .map(|note| Json::from(note.as_str()))
                                    .collect(),
                            ),
                        ));
                        fields.push((
                            "comparisons",
                            Json::Array(section.rows.iter().map(row_json).collect()),
                        ));
                        fields.push((
                            "series",
                            Json::Array(section.series.iter().map(series_json).collect()),
                        ));
                    }
                }
                Json::object(fields)
            })
            .collect();
        Json::object(vec![
            ("mode", Json::from(self.mode)),
            ("rounds", Json::Number(usize_to_f64(self.rounds))),
            ("started_at", Json::from(self.started_at.as_str())),
            ("seconds", Json::Number(self.seconds)),
            (
                "machine",
                Json::object(
                    self.machine
                        .iter()
                        .map(|(key, value)| (*key, Json::from(value.as_str())))
                        .collect(),
                ),
            ),
            ("benchmarks", Json::Array(benchmarks)),
        ])
    }
}

fn cell(label: &str, value: f64, unit: Unit) -> String {
    format!("{label}: **{}**", unit.format(value))
}

fn row_json(row: &Row) -> Json {
    Json::object(vec![
        ("what", Json::from(row.what.as_str())),
        ("ours", Json::from(row.ours.0.as_str())),
        ("ours_value", Json::Number(row.ours.1)),
        (
            "reference",
            row.reference
                .as_ref()
                .map_or(Json::Null, |(label, _)| Json::from(label.as_str())),
        ),
        (
            "reference_value",
            row.reference
                .as_ref()
                .map_or(Json::Null, |(_, value)| Json::Number(*value)),
        ),
        ("ratio", row.ratio().map_or(Json::Null, Json::Number)),
        ("unit", Json::from(row.unit.name())),
        ("higher_is_better", Json::Bool(row.unit.higher_is_better())),
        ("command", Json::from(row.command.as_str())),
    ])
}

fn series_json(series: &Series) -> Json {
    Json::object(vec![
        ("label", Json::from(series.label.as_str())),
        ("unit", Json::from(series.unit.name())),
        ("median", Json::Number(series.median())),
        (
            "values",
            Json::Array(series.values.iter().copied().map(Json::Number).collect()),
        ),
    ])
}

#[allow(clippy::cast_precision_loss)] // small counts
fn usize_to_f64(value: usize) -> f64 {
    value as f64
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
    }

    #[test]
    fn rows_compare_medians() {
        let mut section = Section::default();
        section
            .series("ours", Unit::PerSecond)
            .values
            .extend([10.0, 30.0, 20.0]);
        section
            .series("theirs", Unit::PerSecond)
            .values
            .extend([10.0, 10.0, 10.0]);
        section.compare("ours vs theirs", "ours", Some("theirs"), "cmd");
        assert_eq!(section.rows[0].ratio(), Some(2.0));
        // Rounds pair up: a slow round slows both, and the ratio stays.
        section
            .series("a", Unit::PerSecond)
            .values
            .extend([10.0, 1.0, 10.0]);
        section
            .series("b", Unit::PerSecond)
            .values
            .extend([5.0, 1.0, 5.0]);
        section.compare("a vs b", "a", Some("b"), "cmd");
        assert_eq!(section.rows[1].ratio(), Some(2.0));
        section.series("alone", Unit::Bytes).values.push(72.0);
        section.series("pair", Unit::Bytes).values.push(104.0);
        section.compare("alone vs pair", "alone", Some("pair"), "cmd");
        assert!((section.rows[2].ratio().unwrap() - 72.0 / 104.0).abs() < 1e-12);
        assert_eq!(Unit::PerSecond.format(212_345.0), "212.3k/s");
        assert_eq!(Unit::Millis.format(f64::NAN), "n/a");
    }
}

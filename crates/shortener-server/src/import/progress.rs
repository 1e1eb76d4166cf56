//! How far an import is, on stderr: a progress bar on a terminal (indicatif), else a
//! line per 10 000 links, which a log keeps readable.

use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Links between two lines when stderr is not a terminal.
const EVERY: usize = 10_000;

/// The progress of writing `total` links.
#[derive(Debug)]
pub struct Progress {
    total: usize,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(total: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(u64::try_from(total).unwrap_or(u64::MAX)),
                ProgressDrawTarget::stderr(),
            );
            let style = ProgressStyle::with_template("{bar:40} {pos}/{len} links ({per_sec})");
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar
        });
        Self { total, bar }
    }

    /// `done` links of the total are written.
    pub fn show(&self, done: usize) {
        match &self.bar {
            Some(bar) => bar.set_position(u64::try_from(done).unwrap_or(u64::MAX)),
            None if done.is_multiple_of(EVERY) => {
                eprintln!("shortener: {done} of {} links", self.total)
            }
            None => {}
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

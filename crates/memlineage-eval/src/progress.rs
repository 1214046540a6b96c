//! A progress bar for the `run` callback, drawn with indicatif (the CLI's choice; the library
//! itself only calls the callback).

use indicatif::{ProgressBar, ProgressStyle};

/// A callback that draws a progress bar on standard error, and the bar (call
/// [`ProgressBar::finish_and_clear`] when `run` returns).
pub fn bar() -> (ProgressBar, impl FnMut(&str, u64, u64)) {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg:<10} [{bar:40}] {pos}/{len} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let b = bar.clone();
    let f = move |stage: &str, done: u64, total: u64| {
        if b.length() != Some(total) {
            b.set_length(total);
        }
        b.set_message(stage.to_string());
        b.set_position(done);
    };
    (bar, f)
}

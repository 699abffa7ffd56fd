//! What colouring code costs an answer, printed as medians (rerun with
//! `cargo bench -p cairn-ui --bench highlight`):
//!
//! - colour: a 2,000-line Rust file through the highlighter, against escaping it
//!   plain (what a block of an unknown language gets);
//! - answer: markdown → HTML of an answer holding a 200-line Rust block, coloured
//!   against the same answer with the block's language unknown; the window redraws
//!   the answer being written this way on each piece.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use cairn_ui::{highlight, markdown};

const SNIPPET: &str = r#"/// Reads the settings file, or the defaults when there is none.
pub fn load(path: &Path) -> Result<Settings, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Settings::default()),
        Err(err) => return Err(Error::Read(path.to_owned(), err)),
    };
    let parsed: Settings = toml::from_str(&text).map_err(|e| Error::Parse(e.to_string()))?;
    println!("loaded {} servers, zoom {}%", parsed.servers.len(), 100 * parsed.zoom);
    Ok(parsed)
}
"#;

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    // One unmeasured run warms the allocator and the caches.
    f();
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let lines = SNIPPET.lines().count();
    let file = SNIPPET.repeat(2_000 / lines);
    let coloured = time(51, || {
        black_box(highlight::to_html("rust", black_box(&file)));
    });
    let plain = time(51, || {
        black_box(highlight::to_html("", black_box(&file)));
    });
    let mb_s = file.len() as f64 / coloured.as_secs_f64() / 1e6;
    println!(
        "colour {} lines ({} KB): {:.2} ms ({mb_s:.0} MB/s); plain escape {:.2} ms; {:.1}×",
        file.lines().count(),
        file.len() / 1000,
        coloured.as_secs_f64() * 1e3,
        plain.as_secs_f64() * 1e3,
        coloured.as_secs_f64() / plain.as_secs_f64()
    );

    let block = SNIPPET.repeat(200 / lines);
    let answer = |language: &str| {
        format!(
            "Here is the change, then how to run it.\n\n```{language}\n{block}```\n\nRun `cargo test` after.\n"
        )
    };
    let (rust, unknown) = (answer("rust"), answer("text"));
    let coloured = time(101, || {
        black_box(markdown::to_html(black_box(&rust)));
    });
    let plain = time(101, || {
        black_box(markdown::to_html(black_box(&unknown)));
    });
    println!(
        "answer with a {}-line block: {:.3} ms coloured, {:.3} ms plain; {:.2}×",
        block.lines().count(),
        coloured.as_secs_f64() * 1e3,
        plain.as_secs_f64() * 1e3,
        coloured.as_secs_f64() / plain.as_secs_f64()
    );
}

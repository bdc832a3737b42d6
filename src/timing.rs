//! Where the time of a run goes, for whoever measures it: with `AAYU_TIMINGS=1` in the environment, each
//! phase of `aayu verify --map` (and of the feature-map floor) and of `aayu verify --check` prints one line to stderr,
//! `aayu timing: <phase> <ms> ms`, and so does each sandboxed process (`process `<argv>` (slot <n>)`).
//! Off, a phase costs one branch.

use std::time::Instant;

/// Whether `AAYU_TIMINGS=1` is in aayu's environment.
pub fn enabled() -> bool {
    std::env::var_os("AAYU_TIMINGS").is_some_and(|v| v == "1")
}

/// Says how long `name` took (when timing is on).
pub fn line(name: &str, took: std::time::Duration) {
    eprintln!("aayu timing: {name} {:.1} ms", took.as_secs_f64() * 1000.0);
}

/// The phases of one run.
pub struct Phases {
    last: Option<Instant>,
}

impl Phases {
    /// Starts timing when `AAYU_TIMINGS=1`.
    pub fn start() -> Phases {
        Phases {
            last: enabled().then(Instant::now),
        }
    }

    /// Says how long something measured elsewhere took.
    pub fn report(&mut self, name: &str, took: std::time::Duration) {
        if self.last.is_some() {
            eprintln!("aayu timing: {name} {:.1} ms", took.as_secs_f64() * 1000.0);
        }
    }

    /// Ends the phase `name` (and starts the next).
    pub fn end(&mut self, name: &str) {
        if let Some(last) = self.last {
            let now = Instant::now();
            eprintln!(
                "aayu timing: {name} {:.1} ms",
                now.duration_since(last).as_secs_f64() * 1000.0
            );
            self.last = Some(now);
        }
    }
}

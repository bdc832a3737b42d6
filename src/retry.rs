//! One retry policy for everything aayu sends over the network — GitHub's REST API, the Actions results
//! service and its blob store, and ledger pushes: a bounded number of attempts, exponential backoff with
//! jitter (so that racing writers spread out), and a server's own `retry-after` honoured up to a cap.

use std::time::Duration;

/// How often and how patiently to try.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The pause after the first failure; each later one doubles it.
    pub base: Duration,
    /// The longest pause, a server's `retry-after` included.
    pub longest: Duration,
}

/// The policy of every network call.
pub const NETWORK: Policy = Policy {
    attempts: 5,
    base: Duration::from_millis(250),
    longest: Duration::from_secs(60),
};

/// A ledger push that lost a race to another writer: retried at once (rebuilt on the new tip), a little
/// more often, with short pauses.
pub const PUSH: Policy = Policy {
    attempts: 8,
    base: Duration::from_millis(50),
    longest: Duration::from_secs(2),
};

impl Policy {
    /// Whether attempt `attempt` (counted from 0) may be followed by another.
    pub fn another_after(&self, attempt: u32) -> bool {
        attempt + 1 < self.attempts
    }

    /// The pause after attempt `attempt` (from 0) failed: what the server asked for when it said
    /// (`retry-after`), else `base · 2^attempt` plus up to half of it at random; never above `longest`.
    pub fn pause(&self, attempt: u32, told: Option<Duration>) -> Duration {
        let pause = match told {
            Some(told) => told,
            None => {
                let backoff = self.base.saturating_mul(2u32.saturating_pow(attempt));
                let mut byte = [0u8; 1];
                let jitter = if getrandom::fill(&mut byte).is_ok() {
                    backoff.mul_f64(f64::from(byte[0]) / 510.0)
                } else {
                    Duration::ZERO
                };
                backoff + jitter
            }
        };
        pause.min(self.longest)
    }

    /// Sleeps for [`Policy::pause`].
    pub fn wait(&self, attempt: u32, told: Option<Duration>) {
        std::thread::sleep(self.pause(attempt, told));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_with_jitter_and_stay_under_the_cap() {
        for attempt in 0..4 {
            let base = NETWORK.base * 2u32.pow(attempt);
            let pause = NETWORK.pause(attempt, None);
            assert!(
                pause >= base && pause <= base + base / 2,
                "{attempt}: {pause:?}"
            );
        }
        assert_eq!(NETWORK.pause(20, None), NETWORK.longest);
        assert_eq!(
            NETWORK.pause(0, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            NETWORK.pause(0, Some(Duration::from_secs(3600))),
            NETWORK.longest
        );
        assert!(NETWORK.another_after(3) && !NETWORK.another_after(4));
    }
}

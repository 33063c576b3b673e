//! Clocks (spec §11). The engine never reads time itself: a run is given a [`Clock`].
//! [`VirtualClock`] is a sequential float64 accumulator (sleeps add, nothing waits), which is
//! what makes runs reproducible; [`RealClock`] is for live use only.

use std::sync::Mutex;
use std::time::Instant;

use crate::error::ConfigError;
use crate::json::Value;
use crate::rule::duration;

/// A source of seconds that tools and policies can also sleep on.
pub trait Clock: Send + Sync {
    /// Seconds since an arbitrary origin.
    fn now(&self) -> f64;
    /// Waits `seconds` (a finite, nonnegative duration).
    fn sleep(&self, seconds: f64) -> Result<(), ConfigError>;
    /// The class name reports record (`VirtualClock`, `RealClock`).
    fn name(&self) -> &'static str;
    /// Whether `sleep` only moves the clock (nothing waits): async calls then wait by
    /// sleeping on the clock and yielding once; on any other clock they need a runtime's
    /// sleep ([`crate::storm::Sleeper`]).
    fn is_virtual(&self) -> bool {
        false
    }
}

/// Checks a duration the way the reference does.
pub fn check_duration(seconds: f64) -> Result<f64, ConfigError> {
    duration(&Value::Float(seconds))
}

/// Virtual time: starts at 0.0, `sleep` adds (float64 addition), nothing waits.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now: Mutex<f64>,
}

impl VirtualClock {
    /// A clock at 0.0.
    pub fn new() -> Self {
        VirtualClock::default()
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> f64 {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn sleep(&self, seconds: f64) -> Result<(), ConfigError> {
        let s = check_duration(seconds)?;
        let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        *now += s;
        Ok(())
    }
    fn name(&self) -> &'static str {
        "VirtualClock"
    }
    fn is_virtual(&self) -> bool {
        true
    }
}

/// Monotonic real time; `sleep` really waits. Not deterministic: for live runs only.
#[derive(Debug)]
pub struct RealClock {
    origin: Instant,
}

impl Default for RealClock {
    fn default() -> Self {
        RealClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for RealClock {
    fn now(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }
    fn sleep(&self, seconds: f64) -> Result<(), ConfigError> {
        let s = check_duration(seconds)?;
        std::thread::sleep(std::time::Duration::from_secs_f64(s.min(1e9)));
        Ok(())
    }
    fn name(&self) -> &'static str {
        "RealClock"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_adds_like_python() {
        let c = VirtualClock::new();
        c.sleep(0.15).expect("ok");
        c.sleep(0.3).expect("ok");
        assert_eq!(c.now(), 0.44999999999999996);
        assert!(c.sleep(-1.0).is_err());
        assert!(c.sleep(f64::INFINITY).is_err());
    }
}

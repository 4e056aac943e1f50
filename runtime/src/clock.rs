//! Time as toolgate writes it: milliseconds since the Unix epoch, in stores, sealed states and counts.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the Unix epoch: how stores write times.
///
/// ```
/// assert!(toolgate::store::unix_ms() > 1_700_000_000_000);
/// ```
pub fn unix_ms() -> u64 {
    epoch_ms(SystemTime::now()).cast_unsigned()
}

/// `time` in milliseconds since the Unix epoch, as databases keep it (0 before the epoch).
pub(crate) fn epoch_ms(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Whole milliseconds of `duration`, saturating.
pub(crate) fn whole_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `secs` as a duration, when it is a positive number of seconds a duration can hold (a setting's).
pub(crate) fn positive_seconds(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|t| !t.is_zero())
}

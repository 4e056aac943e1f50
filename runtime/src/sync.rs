//! Locks that outlive a panic: a tool that panicked while another thread held a lock leaves no data half
//! written here (each holder finishes its change before it can panic), so the lock is taken as it is.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// [`Mutex::lock`], ignoring poisoning.
pub(crate) trait Locked<T> {
    /// The guard, whether or not a holder panicked.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

//! [`SignInStore`]: where the gateway keeps the sign-ins to remote servers an operator made, sealed
//! under the key ring so that a copy of the database does not carry them, with which replica renews
//! each now; and the sign-ins begun and not yet finished: at most 32, each for ten minutes, each
//! finished once.

use super::RecordFuture;

/// The sign-ins of a database, shared by every replica on it. What it keeps is sealed before it comes
/// here; it never sees a token.
pub(crate) trait SignInStore: Send + Sync + 'static {
    /// The sealed sign-in kept for the server `server`.
    fn sign_in<'a>(&'a self, server: &'a str) -> RecordFuture<'a, Option<String>>;

    /// Keeps `sealed` as the sign-in of `server`, or forgets it.
    fn keep_sign_in<'a>(&'a self, server: &'a str, sealed: Option<&'a str>)
    -> RecordFuture<'a, ()>;

    /// Forgets the sign-ins whose key is like `pattern` (SQL `LIKE`, `\` escaping) not renewed since
    /// `before_ms`.
    fn forget_idle_sign_ins<'a>(&'a self, pattern: &'a str, before_ms: u64)
    -> RecordFuture<'a, ()>;

    /// Takes the renewal of the sign-in of `server` until `until_ms`, unless another replica holds it
    /// past `now_ms`: whether it was taken. Keeping the sign-in gives it back.
    fn lease_sign_in<'a>(
        &'a self,
        server: &'a str,
        until_ms: u64,
        now_ms: u64,
    ) -> RecordFuture<'a, bool>;

    /// Keeps a sign-in begun for `server` under `state` until `expires_ms`.
    fn begin_sign_in<'a>(
        &'a self,
        state: &'a str,
        server: &'a str,
        sealed: &'a str,
        expires_ms: u64,
    ) -> RecordFuture<'a, ()>;

    /// Takes the sign-in begun under `state`, unless it expired or was taken: its server, and what was
    /// sealed.
    fn finish_sign_in<'a>(&'a self, state: &'a str) -> RecordFuture<'a, Option<(String, String)>>;
}

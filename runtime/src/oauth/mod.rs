//! What toolgate asks an authorization server, as a resource server checking tokens (`toolgate::http`)
//! and as a client signing in to a remote server (`toolgate::remote`): bounded requests, and where an
//! issuer's endpoints are.

mod discovery;
mod fetch;

pub(crate) use discovery::Discovery;
pub(crate) use fetch::{Client, Fetcher};
#[cfg(feature = "remote")]
pub(crate) use fetch::{FetchError, fetchable, origin_and_path};

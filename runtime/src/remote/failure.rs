//! Why a request to a remote server failed, as the session tells it apart: the server cannot be
//! reached, it answered with an error, it refused the credential sent, or the gateway could not sign
//! in to it.

use rmcp::service::ServiceError;

/// Why a request to a server failed: it cannot be reached, it answered with an error, it refused the
/// credential sent with a `WWW-Authenticate` challenge (kept whole: it says how to sign in), or the
/// gateway could not sign in to it.
#[derive(Clone)]
pub(super) enum Failure {
    Unreachable(String),
    Refused(String),
    Challenged(String),
    #[cfg(feature = "oauth")]
    SignIn(String),
}

impl Failure {
    /// What went wrong, for the server's status.
    pub(super) fn said(self) -> String {
        match self {
            Failure::Unreachable(error) | Failure::Refused(error) => error,
            #[cfg(feature = "oauth")]
            Failure::SignIn(error) => error,
            Failure::Challenged(challenge) => format!(
                "it refused the credential sent: {}",
                crate::text::capped(&crate::text::shown(&challenge))
            ),
        }
    }
}

impl From<ServiceError> for Failure {
    fn from(error: ServiceError) -> Self {
        if let Some(challenge) = error.auth_challenge() {
            return Failure::Challenged(challenge.to_owned());
        }
        match error {
            ServiceError::McpError(error) => Failure::Refused(error.message.to_string()),
            ServiceError::UnexpectedResponse => {
                Failure::Refused("an answer of the wrong kind".into())
            }
            other => Failure::Unreachable(other.to_string()),
        }
    }
}

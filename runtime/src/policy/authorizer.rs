//! [`Authorizer`]: the rule that decides which tools a caller may see and run.

use crate::caller::Caller;
use crate::tool::Tool;

/// Decides whether a caller may see and run a tool (the Gate).
///
/// The default holds when the tool is `public` or the caller holds every ability the tool requires. A
/// closure `Fn(&Caller, &Tool) -> bool` is an authorizer too.
///
/// ```rust,standalone_crate
/// use toolgate::{Caller, Registry, Tool};
///
/// // Admins may run everything; everyone else needs the declared abilities.
/// let registry = Registry::builder()
///     .authorizer(|caller: &Caller, tool: &Tool| caller.role() == Some("Admin") || tool.allows(caller))
///     .build()
///     .unwrap();
/// # let _ = registry;
/// ```
pub trait Authorizer: Send + Sync + 'static {
    /// Whether `caller` may see and run `tool`.
    fn allows(&self, caller: &Caller, tool: &Tool) -> bool;
}

impl<F> Authorizer for F
where
    F: Fn(&Caller, &Tool) -> bool + Send + Sync + 'static,
{
    fn allows(&self, caller: &Caller, tool: &Tool) -> bool {
        self(caller, tool)
    }
}

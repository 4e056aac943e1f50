//! [`CallParts`]: everything one call carries, from which parameters are extracted.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::caller::Caller;

use super::{Answers, Invocation, Log, Progress, Shareable};

/// The pieces of one call: its arguments, the caller, invocation metadata, application state, the tool's
/// settings, a progress reporter and a cancellation token. [`Param`](crate::param::Param) impls read from it.
///
/// It borrows what the registry holds while parameters are extracted, so extraction costs no reference
/// counting; [`into_owned`](Self::into_owned) gives a `'static` copy to keep in a future.
///
/// A [`DynamicTool`](crate::DynamicTool)'s handler receives it whole:
///
/// ```
/// use serde_json::json;
/// use toolgate::{Caller, DynamicTool, Registry};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let whoami = DynamicTool::new("parts_whoami", "Who is calling?", json!({ "type": "object" }), |_, parts| async move {
///     format!("{} via {}", parts.caller().id(), parts.invocation().tool_name)
/// })
/// .public()
/// .read_only();
/// let registry = Registry::builder().tool(whoami).build()?;
/// let outcome = registry.call(&Caller::new("ada"), "parts_whoami", json!({})).await;
/// assert_eq!(outcome.into_result().text_for_model(), "ada via parts_whoami");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct CallParts<'a> {
    pub(crate) arguments: Map<String, Value>,
    pub(crate) caller: Cow<'a, Caller>,
    pub(crate) invocation: Cow<'a, Invocation>,
    pub(crate) state: Cow<'a, Arc<StateMap>>,
    pub(crate) settings: Option<Cow<'a, Arc<Value>>>,
    pub(crate) progress: Progress,
    pub(crate) log: Log,
    pub(crate) extensions: StateMap,
    /// `None` when nothing can cancel the call (no timeout, no caller's token).
    pub(crate) cancellation: Option<CancellationToken>,
    /// The answers a resumed call carries, for [`Ask`](crate::Ask); `None` on a first call.
    pub(crate) answers: Option<Arc<Answers>>,
}

impl CallParts<'_> {
    /// A copy that owns everything, to move into a `'static` future.
    pub fn into_owned(self) -> CallParts<'static> {
        CallParts {
            arguments: self.arguments,
            caller: Cow::Owned(self.caller.into_owned()),
            invocation: Cow::Owned(self.invocation.into_owned()),
            state: Cow::Owned(self.state.into_owned()),
            settings: self.settings.map(|s| Cow::Owned(s.into_owned())),
            progress: self.progress,
            log: self.log,
            extensions: self.extensions,
            cancellation: self.cancellation,
            answers: self.answers,
        }
    }

    /// Who is calling.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The call's metadata: tool name, tool call id, session id, trace context.
    pub fn invocation(&self) -> &Invocation {
        &self.invocation
    }

    /// Application state of type `T`, as added with [`RegistryBuilder::state`](crate::RegistryBuilder::state).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.state.get::<T>()
    }

    /// The tool's settings, as configured by the operator.
    pub fn settings(&self) -> Option<&Value> {
        self.settings.as_deref().map(|s| &**s)
    }

    /// The validated arguments not yet taken by a parameter.
    pub fn arguments(&self) -> &Map<String, Value> {
        &self.arguments
    }

    /// Takes one argument out.
    pub fn take_argument(&mut self, name: &str) -> Option<Value> {
        self.arguments.remove(name)
    }

    /// Takes all remaining arguments out.
    pub fn take_arguments(&mut self) -> Map<String, Value> {
        std::mem::take(&mut self.arguments)
    }

    /// A value the caller or transport attached to this call with
    /// [`Call::extension`](crate::Call::extension).
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }

    /// The logger of this call.
    pub fn log(&self) -> &Log {
        &self.log
    }

    /// The progress reporter of this call.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// The token that is cancelled when the call is cancelled or times out (one that is never cancelled
    /// when the call has neither a timeout nor a caller's token).
    pub fn cancellation(&self) -> CancellationToken {
        self.cancellation.clone().unwrap_or_default()
    }
}

/// Application state by type: a short list scanned linearly, faster than hashing for a handful of entries.
#[derive(Default)]
pub(crate) struct StateMap(Vec<Shared>);

/// A value of a [`StateMap`], with the clone its type had where it was put in, so that where it is taken
/// out its type need not be known to be `Clone` (and a type that is not is refused where it is named,
/// with [`Shareable`]'s message, rather than as "not a parameter").
struct Shared {
    id: TypeId,
    name: &'static str,
    value: Box<dyn Any + Send + Sync>,
    clone_into: fn(&(dyn Any + Send + Sync), &mut dyn Any),
}

/// Clones `from`, a `T`, into `into`, an `Option<T>`.
fn clone_into<T: Shareable>(from: &(dyn Any + Send + Sync), into: &mut dyn Any) {
    if let (Some(from), Some(into)) = (from.downcast_ref::<T>(), into.downcast_mut::<Option<T>>()) {
        *into = Some(from.clone());
    }
}

impl StateMap {
    pub(crate) fn insert<T: Shareable>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        self.0.retain(|shared| shared.id != id);
        self.0.push(Shared {
            id,
            name: std::any::type_name::<T>(),
            value: Box::new(value),
            clone_into: clone_into::<T>,
        });
    }

    fn find<T: 'static>(&self) -> Option<&Shared> {
        let id = TypeId::of::<T>();
        self.0.iter().find(|shared| shared.id == id)
    }

    pub(crate) fn get<T: 'static>(&self) -> Option<&T> {
        self.find::<T>()?.value.downcast_ref()
    }

    /// A clone of the value of type `T`.
    pub(crate) fn cloned<T: 'static>(&self) -> Option<T> {
        let shared = self.find::<T>()?;
        let mut out: Option<T> = None;
        (shared.clone_into)(&*shared.value, &mut out);
        out
    }

    pub(crate) fn contains(&self, id: TypeId) -> bool {
        self.0.iter().any(|shared| shared.id == id)
    }
}

impl std::fmt::Debug for StateMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|shared| shared.name))
            .finish()
    }
}

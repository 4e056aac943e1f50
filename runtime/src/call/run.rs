//! Running a step: hooks before, the preview or the tool's future, with timeout, cancellation and panic
//! capture, or a body that cannot wait, in place.

use std::any::Any;
use std::borrow::Cow;
use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Handler, ToolId};
use crate::confirm::GrantKind;
use crate::error::{ErrorKind, ToolError};
use crate::output::{Outcome, Pending, ToolResult};
use crate::param::CallParts;
use crate::policy::ceiling::{Ceilings, Refused, RunKey};
use crate::policy::hooks::CallInfo;
use crate::tool::{Body, ToolFuture};

use super::admit::limit_error;
use super::flight::{InFlight, Launched, Step};
use super::pipeline::Pipeline;
use super::request::Attachments;

impl Pipeline {
    /// Hooks before the call, then `step`: the preview's or the tool's future, with its parameters'
    /// parts, or the tool's result.
    pub(super) fn launch(
        &self,
        flight: &mut InFlight<'_>,
        index: ToolId,
        arguments: Map<String, Value>,
        attachments: Attachments,
        step: Step,
    ) -> Launched {
        let Attachments {
            progress,
            log,
            extensions,
            cancellation,
            answers,
        } = attachments;
        let registered = &flight.snapshot.tool(index);
        flight.admitted = Some(index);
        if !self.hooks.is_empty() {
            let hook_arguments = Value::Object(arguments.clone());
            let info = CallInfo {
                tool: &registered.tool,
                caller: flight.caller,
                arguments: &hook_arguments,
                invocation: &flight.invocation,
            };
            let answer = self.hooks.iter().find_map(|hook| hook.before_call(&info));
            flight.hook_arguments = Some(hook_arguments);
            if let Some(result) = answer {
                return Launched::Done(Box::new(Outcome::Done(result)));
            }
        }
        let confirmed = step != Step::Preview;
        if confirmed
            && let Err(refusal) = self.ceiling(
                registered,
                flight.caller,
                &flight.invocation,
                Ceilings::take,
            )
        {
            return Launched::Done(refusal);
        }
        let external = cancellation.is_some();
        let mut timeout = registered.tool.timeout.or(self.default_timeout);
        if flight.waited_ms > 0 {
            let waited = Duration::from_millis(u64::from(flight.waited_ms));
            timeout = timeout.map(|t| t.saturating_sub(waited));
        }
        let token = cancellation.or_else(|| timeout.map(|_| CancellationToken::new()));
        let mut parts = CallParts {
            arguments,
            caller: Cow::Borrowed(flight.caller),
            invocation: Cow::Borrowed(&*flight.invocation),
            state: Cow::Borrowed(flight.catalog.state()),
            settings: registered.settings_for(flight.caller).map(Cow::Borrowed),
            progress,
            log,
            extensions,
            cancellation: token.clone(),
            answers,
        };
        match &registered.handler {
            Handler::Compiled {
                preview: Some(preview),
                ..
            } if !confirmed => {
                let arguments = parts.arguments.clone();
                Launched::Preview {
                    future: preview(parts),
                    arguments,
                }
            }
            Handler::Compiled {
                call: Body::Finishes(call),
                ..
            } if step == Step::InPlace && timeout.is_none() => {
                // The token, if any, is the caller's: checked first, as before a body's first poll.
                Launched::Finished(
                    if token.as_ref().is_some_and(CancellationToken::is_cancelled) {
                        Err(cancelled())
                    } else {
                        std::panic::catch_unwind(AssertUnwindSafe(|| call(&mut parts)))
                            .unwrap_or_else(|payload| Err(panicked(&*payload)))
                    },
                )
            }
            Handler::Compiled { call, .. } => Launched::Run {
                future: call.future(parts),
                timeout,
                token,
                external,
            },
            Handler::Dynamic {
                preview: Some(preview),
                ..
            } if !confirmed => {
                let arguments = parts.arguments.clone();
                let given = Value::Object(arguments.clone());
                Launched::Preview {
                    future: preview(given, parts.into_owned()),
                    arguments,
                }
            }
            Handler::Dynamic { call, .. } => {
                let arguments = Value::Object(parts.take_arguments());
                Launched::Run {
                    future: call(arguments, parts.into_owned()),
                    timeout,
                    token,
                    external,
                }
            }
        }
    }

    /// `launched`, whose run is counted first in the ceiling store replicas share, when its tool has a
    /// ceiling and the registry such a store; refused, with the body never run, when the ceiling is
    /// reached or the store cannot be reached. Such tools take the path of rounds (`via_rounds`), which
    /// applies this after `launch`, so that the common path pays nothing for it.
    pub(super) fn counted(
        &self,
        flight: &InFlight<'_>,
        index: ToolId,
        launched: Launched,
    ) -> Launched {
        let tool = &flight.snapshot.tool(index).tool;
        let (Some(store), Some(max)) = (&self.ceilings.shared, tool.max_runs) else {
            return launched;
        };
        let Launched::Run {
            future,
            timeout,
            token,
            external,
        } = launched
        else {
            return launched;
        };
        let store = Arc::clone(store);
        let caller: Box<str> = flight.caller.budget().into();
        let session = flight.invocation.session_id.clone();
        let tool = Arc::clone(&tool.name);
        let expires = self.ceilings.run_expiry();
        let future: ToolFuture = Box::pin(async move {
            let key = RunKey {
                caller: &caller,
                session: session.as_deref(),
                tool: &tool,
            };
            match store.take(key, max, expires).await {
                Ok(true) => future.await,
                Ok(false) => Err(limit_error(&tool, max, &Refused::Reached)),
                Err(error) => {
                    tracing::error!(target: "toolgate", tool = &*tool, error = error.message(), "the run counts cannot be reached");
                    Err(ToolError::with_kind(
                        ErrorKind::Unavailable,
                        format!(
                            "`{tool}` has a limit on its runs, and their count cannot be reached, so it did not run. Try again shortly."
                        ),
                    ))
                }
            }
        });
        Launched::Run {
            future,
            timeout,
            token,
            external,
        }
    }

    /// Awaits the step. Timeouts, cancellation and previews are boxed, off the common path's state machine.
    /// An `async` block, not an `async fn`, so that its future holds `launched` once, not twice.
    #[allow(clippy::manual_async_fn)] // see above: an `async fn` holds its arguments twice
    pub(super) fn drive(
        &self,
        flight: &InFlight<'_>,
        launched: Launched,
    ) -> impl Future<Output = Outcome> {
        async move {
            let result = match launched {
                Launched::Done(outcome) => return *outcome,
                Launched::Finished(result) => result,
                Launched::Run {
                    future,
                    timeout: None,
                    token: None,
                    ..
                } => CatchPanic(future).await,
                Launched::Run {
                    future,
                    timeout,
                    token,
                    external,
                } => {
                    Box::pin(guard(
                        &flight.invocation.tool_name,
                        future,
                        timeout,
                        token,
                        external,
                    ))
                    .await
                }
                Launched::Preview { future, arguments } => {
                    let preview = match Box::pin(CatchPanic(future)).await {
                        Ok(preview) => preview.shown_to_people(),
                        Err(error) => return Outcome::Failed(error),
                    };
                    let confirmation = self.confirmations.seal(
                        GrantKind::Confirm,
                        &flight.invocation.tool_name,
                        flight.caller,
                        &arguments,
                        Map::new(),
                    );
                    return Outcome::NeedsConfirmation(Pending {
                        tool: flight.invocation.tool_name.to_string(),
                        preview,
                        confirmation,
                    });
                }
            };
            Outcome::finished(result)
        }
    }
}

/// Runs a tool future with panic capture, its timeout, and the caller's cancellation.
async fn guard(
    tool: &str,
    future: ToolFuture,
    timeout: Option<Duration>,
    token: Option<CancellationToken>,
    external: bool,
) -> Result<ToolResult, ToolError> {
    let future = CatchPanic(future);
    let timed = async {
        match timeout {
            Some(limit) => tokio::time::timeout(limit, future)
                .await
                .unwrap_or_else(|_| {
                    token.as_ref().inspect(|t| t.cancel());
                    Err(ToolError::with_kind(
                        ErrorKind::Timeout,
                        format!("`{tool}` did not finish within {limit:?} and was stopped."),
                    ))
                }),
            None => future.await,
        }
    };
    let Some(token) = token.as_ref().filter(|_| external) else {
        return timed.await;
    };
    // Cancellation wins, as the token is checked before each poll of the tool; but the call waits on the
    // token only when the tool waits, so that a call done in its first poll, as most are, never
    // registers with it (two locks and a waiter).
    let (mut timed, mut wait) = (pin!(timed), pin!(token.cancelled()));
    poll_fn(|cx| {
        if token.is_cancelled() {
            return Poll::Ready(Err(cancelled()));
        }
        if let Poll::Ready(result) = timed.as_mut().poll(cx) {
            return Poll::Ready(result);
        }
        wait.as_mut().poll(cx).map(|()| Err(cancelled()))
    })
    .await
}

/// The error of a call its caller cancelled.
fn cancelled() -> ToolError {
    ToolError::with_kind(ErrorKind::Cancelled, "The call was cancelled.")
}

/// Turns a panic while polling the tool into an internal [`ToolError`].
struct CatchPanic<F>(F);

impl<F, T> Future for CatchPanic<Pin<Box<F>>>
where
    F: Future<Output = Result<T, ToolError>> + ?Sized,
{
    type Output = Result<T, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.0;
        std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx)))
            .unwrap_or_else(|payload| Poll::Ready(Err(panicked(&*payload))))
    }
}

/// The error of a tool that panicked with `payload`.
fn panicked(payload: &(dyn Any + Send)) -> ToolError {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    ToolError::panicked(message)
}

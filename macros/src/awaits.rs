//! Whether a tool's body can wait: any `.await`, or a macro that could expand to one. A body that cannot
//! finishes in its first poll, so the runtime runs it in place, without a future of its own.

use proc_macro2::{TokenStream, TokenTree};

/// Macros of `std`, `serde_json` and `tracing` that never expand to an `.await` of their own (an `.await`
/// written inside one is still seen).
const NEVER_AWAIT: [&str; 40] = [
    "assert",
    "assert_eq",
    "assert_ne",
    "concat",
    "debug",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "debug_span",
    "env",
    "eprint",
    "eprintln",
    "error",
    "error_span",
    "event",
    "file",
    "format",
    "format_args",
    "info",
    "info_span",
    "json",
    "line",
    "matches",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "span",
    "stringify",
    "todo",
    "trace",
    "trace_span",
    "unimplemented",
    "unreachable",
    "vec",
    "warn",
    "warn_span",
    "write",
    "writeln",
];

/// Whether `body` may wait: it has an `.await`, or calls a macro not known to expand to none.
pub(crate) fn may_wait(body: TokenStream) -> bool {
    let tokens: Vec<TokenTree> = body.into_iter().collect();
    tokens.iter().enumerate().any(|(at, token)| match token {
        TokenTree::Ident(ident) => {
            ident == "await" || calls_unknown_macro(ident, &tokens[at + 1..])
        }
        TokenTree::Group(group) => may_wait(group.stream()),
        _ => false,
    })
}

/// Whether `name`, followed by `rest`, calls a macro not in [`NEVER_AWAIT`]: `name!(..)`, `name![..]` or
/// `name!{..}` (and not `name != ..`).
fn calls_unknown_macro(name: &proc_macro2::Ident, rest: &[TokenTree]) -> bool {
    matches!(
        rest,
        [TokenTree::Punct(bang), TokenTree::Group(_), ..]
            if bang.as_char() == '!' && !NEVER_AWAIT.contains(&name.to_string().as_str())
    )
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::may_wait;

    #[test]
    fn a_body_waits_if_it_awaits_or_calls_a_macro_that_might() {
        assert!(may_wait(quote!({ fetch().await })));
        assert!(may_wait(quote!({
            let x = { (fetch().await, 1) };
            x
        })));
        assert!(may_wait(quote!({ format!("{}", fetch().await) })));
        assert!(may_wait(quote!({
            tokio::select! { _ = a => 1 }
        })));
        assert!(may_wait(quote!({ my_macro!(x) })));
        assert!(may_wait(quote!({ if a != b { my_macro![x] } else { 0 } })));
    }

    #[test]
    fn a_body_without_await_or_unknown_macros_cannot_wait() {
        assert!(!may_wait(quote!({ a + b })));
        assert!(!may_wait(quote!({
            let s = format!("{a}");
            if a != b { s } else { vec![1].len().to_string() }
        })));
        assert!(!may_wait(quote!({
            tracing::info!(a);
            Ok(serde_json::json!({ "a": a }))
        })));
        assert!(!may_wait(quote!({
            let f = async { 1 };
            drop(f);
            x.awaited
        })));
    }
}

//! The `#[tool]` attribute of [toolgate](https://docs.rs/toolgate).
//!
//! Depend on `toolgate`, not on this crate: it re-exports the attribute and holds every type the generated code
//! calls. The attribute's reference lives on `toolgate::tool`.

mod arg;
mod ast;
mod attr;
mod awaits;
mod codegen;
mod expand;
mod valid;

use proc_macro::TokenStream;

/// Turns a plain `async fn` into a registered tool. See `toolgate::tool` for the reference.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(args.into(), item.into()).into()
}

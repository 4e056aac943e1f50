//! The attribute's steps: parse, check, then generate the code, or fall back to the item beside every
//! error found.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::ItemFn;

use crate::ast::ToolFn;
use crate::attr::{Errors, ToolAttr};
use crate::{codegen, valid};

/// The entry point.
pub(crate) fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let Ok(function) = syn::parse2::<ItemFn>(item.clone()) else {
        let error = syn::Error::new(Span::call_site(), "`#[tool]` goes on an `async fn`");
        return fallback(item, &error);
    };
    let mut errors = Errors::default();
    let attr = ToolAttr::parse(args, &mut errors);
    let tool = ToolFn::new(function, &mut errors);
    valid::check(&attr, &tool, &mut errors);
    if let Err(errors) = errors.into_result() {
        return fallback(&tool.item, &errors);
    }
    let registration = codegen::registration(&attr, &tool);
    if std::env::var_os("TOOLGATE_MACROS_DEBUG").is_some() {
        eprintln!("#[tool] {} expands to:\n{registration}", tool.ident());
    }
    let item = &tool.item;
    quote!(#item #registration)
}

/// The item (without its `#[arg]`s) beside the errors, so that the function still exists for the rest of
/// the crate and for the editor, and nothing is registered.
fn fallback(item: impl ToTokens, errors: &syn::Error) -> TokenStream {
    let errors = errors.to_compile_error();
    quote!(#errors #item)
}

//! A typed model of the annotated function: its name, docs, parameters and output.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Attribute, Expr, ExprLit, FnArg, Ident, ItemFn, Lit, Meta, Pat, ReturnType, Type};

use crate::arg::ArgAttr;
use crate::attr::Errors;

/// The function under `#[tool]`, with the helper attributes on its parameters taken out.
pub(crate) struct ToolFn {
    /// The user's item as it will be emitted: unchanged but for `///` and `#[arg]` on parameters.
    pub(crate) item: ItemFn,
    pub(crate) docs: Docs,
    pub(crate) params: Vec<Param>,
    /// The written return type, or `()` when there is none.
    pub(crate) output: Type,
}

/// One parameter: its type, its JSON name when it is a plain identifier, its docs and `#[arg]` settings.
pub(crate) struct Param {
    pub(crate) ty: Type,
    pub(crate) name: Option<String>,
    pub(crate) docs: Docs,
    pub(crate) arg: ArgAttr,
}

/// The `///` lines of an item: literal lines, or expressions such as `include_str!(..)`.
#[derive(Default)]
pub(crate) struct Docs(Vec<Expr>);

impl ToolFn {
    /// Models `item`; parameter mistakes (a receiver, bad `#[arg]`) land in `errors`.
    pub(crate) fn new(mut item: ItemFn, errors: &mut Errors) -> Self {
        let docs = Docs::of(&item.attrs);
        let mut params = Vec::new();
        for input in &mut item.sig.inputs {
            let FnArg::Typed(typed) = input else { continue };
            let arg = ArgAttr::parse(&typed.attrs, errors);
            let docs = Docs::of(&typed.attrs);
            typed
                .attrs
                .retain(|a| !a.path().is_ident("doc") && !a.path().is_ident("arg"));
            let name = match arg.name.as_ref() {
                Some(name) => Some(name.value()),
                None => {
                    ident_of(&typed.pat).map(|i| i.to_string().trim_start_matches("r#").to_owned())
                }
            };
            params.push(Param {
                ty: (*typed.ty).clone(),
                name,
                docs,
                arg,
            });
        }
        let output = match &item.sig.output {
            ReturnType::Default => syn::parse_quote!(()),
            ReturnType::Type(_, ty) => (**ty).clone(),
        };
        ToolFn {
            item,
            docs,
            params,
            output,
        }
    }

    pub(crate) fn ident(&self) -> &Ident {
        &self.item.sig.ident
    }
}

/// The bound name of a plain `name: T` or `mut name: T` parameter.
fn ident_of(pat: &Pat) -> Option<&Ident> {
    match pat {
        Pat::Ident(p) if p.subpat.is_none() => Some(&p.ident),
        _ => None,
    }
}

impl Docs {
    fn of(attrs: &[Attribute]) -> Self {
        Docs(
            attrs
                .iter()
                .filter_map(|attr| match &attr.meta {
                    Meta::NameValue(nv) if nv.path.is_ident("doc") => Some(nv.value.clone()),
                    _ => None,
                })
                .collect(),
        )
    }

    /// The literal lines, or `None` when a line is an expression only the compiler can evaluate.
    fn literal_lines(&self) -> Option<Vec<String>> {
        self.0
            .iter()
            .map(|e| match e {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            })
            .collect()
    }

    /// The text as a `&'static str` expression: lines with one leading space removed, joined by `\n`, trimmed.
    pub(crate) fn text(&self) -> TokenStream {
        match self.literal_lines() {
            Some(lines) => {
                let text = join(&lines);
                quote!(#text)
            }
            None => {
                let parts = self.0.iter().map(ToTokens::to_token_stream);
                quote!(::core::concat!(#(#parts),*))
            }
        }
    }

    /// Whether there is no text: no `///` lines, or only empty ones.
    pub(crate) fn is_empty(&self) -> bool {
        self.literal_lines()
            .is_some_and(|lines| join(&lines).is_empty())
    }
}

fn join(lines: &[String]) -> String {
    let joined: Vec<&str> = lines
        .iter()
        .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end())
        .collect();
    joined.join("\n").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_params_and_strips_helper_attributes() {
        let item: ItemFn = syn::parse_quote! {
            /// Find orders.
            ///
            /// Returns rows.
            async fn search(
                db: State<Db>,
                /// Order number.
                #[arg(length(max = 20))]
                mut query: Option<String>,
                #[arg(name = "n")] (a, b): (u32, u32),
            ) -> Result<Page<Row>, ToolError> { todo!() }
        };
        let mut errors = Errors::default();
        let f = ToolFn::new(item, &mut errors);
        assert!(errors.into_result().is_ok());
        let names: Vec<Option<&str>> = f.params.iter().map(|p| p.name.as_deref()).collect();
        assert_eq!(names, [Some("db"), Some("query"), Some("n")]);
        assert!(!f.docs.is_empty() && f.params[0].docs.is_empty());
        assert_eq!(
            f.docs.text().to_string(),
            quote!("Find orders.\n\nReturns rows.").to_string()
        );
        assert_eq!(
            f.params[1].docs.text().to_string(),
            quote!("Order number.").to_string()
        );
        assert!(f.params[1].arg.max_length.is_some());
        let emitted = f.item.to_token_stream().to_string();
        assert!(
            !emitted.contains("arg") && !emitted.contains("Order number"),
            "{emitted}"
        );
        assert_eq!(
            f.output.to_token_stream().to_string(),
            "Result < Page < Row > , ToolError >"
        );
    }
}

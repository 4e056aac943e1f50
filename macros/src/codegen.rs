//! Code generation: the user's item, unchanged, plus one hidden `const _` block that registers it.
//!
//! All type-level work (schemas, extraction, encoding) happens in the runtime through `__private`; the
//! generated code only names the user's types, at their spans, so that errors land on the user's tokens.
//! Nothing here checks: the input was checked before (`valid.rs`).

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr};

use crate::arg::Choice;
use crate::ast::{Param, ToolFn};
use crate::attr::{KeyValue, ToolAttr};
use crate::awaits;
use crate::valid;

/// The registration of a checked tool.
pub(crate) fn registration(attr: &ToolAttr, tool: &ToolFn) -> TokenStream {
    let krate = attr.krate.as_ref().map_or_else(
        || quote!(::toolgate),
        |k| {
            let path = &k.value;
            quote!(#path)
        },
    );
    let tg = quote!(#krate::__private);
    let ident = tool.ident();
    let ident_string = ident.to_string();
    let name = attr.name.as_ref().map_or_else(
        || ident_string.trim_start_matches("r#").to_owned(),
        |n| n.value.value(),
    );
    // The name rule is the runtime's, checked in a `const` at the name's token.
    let (name_span, named) = attr
        .name
        .as_ref()
        .map_or((ident.span(), false), |n| (n.value.span(), true));
    let message = if named {
        quote!(#tg::INVALID_NAME)
    } else {
        quote!(#tg::INVALID_FN_NAME)
    };
    let check_name = quote_spanned! {name_span=>
        const _: () = if !#tg::is_tool_name(#name) { ::core::panic!("{}", #message) };
    };
    // Only a built-in's name can replace it, checked like the name rule, at the key.
    let check_override = attr.overrides_builtin.as_ref().map(|key| {
        quote_spanned! {key.span()=>
            const _: () = if !#tg::is_replaceable(#name) { ::core::panic!("{}", #tg::NOT_REPLACEABLE) };
        }
    });
    let title = match &attr.title {
        Some(title) => title.value.value(),
        None => humanize(&name),
    };
    let description = attr.description.as_ref().map_or_else(
        || tool.docs.text(),
        |d| {
            let d = &d.value;
            quote!(#d)
        },
    );
    let access = match (&attr.ability, &attr.enforced_downstream) {
        (Some(abilities), _) => {
            let abilities = &abilities.value;
            quote!(#tg::Access::Abilities(&[#(#abilities),*]))
        }
        (None, Some(_)) => quote!(#tg::Access::Abilities(&[])),
        (None, None) => quote!(#tg::Access::Public),
    };
    let categories: Vec<&LitStr> = attr
        .category
        .iter()
        .map(|c| &c.value)
        .chain(attr.categories.iter().flat_map(|c| &c.value))
        .collect();
    let capability = option(&tg, attr.capability.as_ref().map(|c| &c.value));
    let flag = |f: &Option<syn::Path>| f.is_some();
    let (read_only, system) = (flag(&attr.read_only), flag(&attr.system));
    let (overrides_builtin, downstream) = (
        flag(&attr.overrides_builtin),
        flag(&attr.enforced_downstream),
    );
    let defer = mode(&tg, "Defer", &attr.defer, "Auto", "Always");
    let task = mode(&tg, "TaskSupport", &attr.task, "Forbidden", "Optional");
    let (idempotent, open_world) = (flag(&attr.idempotent), flag(&attr.open_world));
    let max_runs = option(&tg, attr.max_runs.as_ref().map(|m| &m.value));
    let timeout = attr
        .timeout
        .as_ref()
        .and_then(|t| valid::parse_duration_ms(&t.value.value()));
    let timeout_ms = option(&tg, timeout);

    let params: Vec<TokenStream> = tool.params.iter().map(|p| param_spec(&tg, p)).collect();
    let count = params.len();
    let vars: Vec<_> = (0..count)
        .map(|i| format_ident!("__toolgate_arg{}", i))
        .collect();
    let types: Vec<_> = tool.params.iter().map(|p| &p.ty).collect();
    let cx = quote!(__toolgate_cx);
    // Each parameter from the call's parts, borrowed as `parts`; `fail` makes what the function returns
    // on an error.
    let extract = |parts: TokenStream, fail: TokenStream| {
        let lines = types.iter().zip(&vars).enumerate().map(|(i, (ty, var))| {
            quote_spanned! {ty.span()=>
                let #var = match <#ty as #tg::Param>::extract(#parts, &__TOOLGATE_PARAMS[#i]) {
                    #tg::Ok(value) => value,
                    #tg::Err(error) => return #fail(error),
                };
            }
        });
        quote!(#(#lines)*)
    };
    let output = &tool.output;
    let output_spec = quote_spanned! {output.span()=>
        (&&&&&#tg::dispatch::Probe::<#output>::NEW).spec()
    };
    let call_user = quote_spanned!(ident.span()=> #ident(#(#vars),*));
    let (preview_fn, preview_entry) = match &attr.preview {
        Some(preview) => {
            let extract_preview = extract(quote!(&mut #cx), quote!(#tg::fail));
            let path = &preview.value;
            let hook =
                quote_spanned!(path.span()=> let __toolgate_hook: fn(#(#types),*) -> _ = #path;);
            let awaited =
                quote_spanned!(path.span()=> #tg::into_preview(__toolgate_hook(#(#vars),*).await));
            let function = quote! {
                fn __toolgate_preview(mut #cx: #tg::CallParts<'_>) -> #tg::PreviewFuture {
                    #hook
                    #extract_preview
                    #tg::Box::pin(async move { #awaited })
                }
            };
            (function, quote!(#tg::Some(__toolgate_preview)))
        }
        None => (quote!(), quote!(#tg::None)),
    };
    let line = quote_spanned!(ident.span()=> ::core::line!());
    let tg_at_fn = respan(&tg, ident.span());
    // A body that cannot wait is run in place, on borrowed parts; any other is boxed as a future that owns
    // them. Each kind: how the function takes the parts and lends them, what a failed extraction returns,
    // the function's return type, how it wraps the body, and the entry's variant.
    let (takes, lends, fail, returns, wrap, kind) =
        if awaits::may_wait(tool.item.block.to_token_stream()) {
            let wrap = quote_spanned!(ident.span()=> #tg_at_fn::Box::pin);
            let takes = quote!(mut #cx: #tg::CallParts<'_>);
            (
                takes,
                quote!(&mut #cx),
                quote!(#tg::fail),
                quote!(ToolFuture),
                wrap,
                quote!(Awaits),
            )
        } else {
            let wrap = quote_spanned!(ident.span()=> #tg_at_fn::finish);
            let takes = quote!(#cx: &mut #tg::CallParts<'_>);
            (
                takes,
                quote!(#cx),
                quote!(#tg::Err),
                quote!(Finished),
                wrap,
                quote!(Finishes),
            )
        };
    let extract_call = extract(lends, fail);
    let run = quote_spanned!(ident.span()=> #wrap(async move { (__toolgate_output().encode)(#call_user.await) }));
    let call_fn = quote! {
        fn __toolgate_call(#takes) -> #tg::#returns {
            #extract_call
            #run
        }
    };
    let body = quote!(#tg::Body::#kind(__toolgate_call));
    let check_params =
        quote_spanned!(ident.span()=> const _: () = #tg_at_fn::check_params(__TOOLGATE_PARAMS););
    // A `State<T>` or `Extension<T>` is refused at its `T` when each call could not clone it.
    let shareable_checks = types.iter().filter_map(|ty| {
        let shared = shared_type(ty)?;
        let tg_at = respan(&tg, shared.span());
        Some(quote_spanned!(shared.span()=> const _: () = #tg_at::check_shareable::<#shared>();))
    });
    let named_checks = tool.params.iter().zip(&tool.item.sig.inputs).map(|(param, input)| {
        let (ty, named, tg_at) = (&param.ty, param.name.is_some(), respan(&tg, input.span()));
        quote_spanned!(input.span()=> const _: () = #tg_at::check_named(<#ty as #tg::Param>::KIND, #named);)
    });

    quote! {
        #[allow(non_upper_case_globals, unused_qualifications, clippy::all)]
        const _: () = {
            const __TOOLGATE_PARAMS: &[#tg::ParamSpec] = &[#(#params),*];
            #check_name
            #check_override
            #check_params
            #(#named_checks)*
            #(#shareable_checks)*

            fn __toolgate_output() -> #tg::OutputSpec<#output> {
                #[allow(unused_imports)]
                use #tg::dispatch::*;
                #output_spec
            }

            #call_fn

            #preview_fn

            #tg::inventory::submit! {
                #tg::ToolEntry {
                    name: #name,
                    title: #tg::Some(#title),
                    description: #description,
                    access: #access,
                    downstream: #downstream,
                    read_only: #read_only,
                    capability: #capability,
                    categories: &[#(#categories),*],
                    system: #system,
                    overrides_builtin: #overrides_builtin,
                    defer: #defer,
                    task: #task,
                    idempotent: #idempotent,
                    open_world: #open_world,
                    max_runs: #max_runs,
                    timeout_ms: #timeout_ms,
                    params: __TOOLGATE_PARAMS,
                    output_schema: |generator| (__toolgate_output().schema)(generator),
                    call: #body,
                    preview: #preview_entry,
                    module: ::core::module_path!(),
                    file: ::core::file!(),
                    line: #line,
                }
            }
        };
    }
}

/// The variant of `toolgate::{kind}` a mode key asks for: `unset` without the key, `alone` for the key
/// without a value, else the mode written (`"never"` is `Never`, `"after_questions"` `AfterQuestions`).
fn mode(
    tg: &TokenStream,
    kind: &str,
    key: &Option<KeyValue<Option<LitStr>>>,
    unset: &str,
    alone: &str,
) -> TokenStream {
    let variant = match key.as_ref().map(|k| k.value.as_ref().map(LitStr::value)) {
        None => unset.to_owned(),
        Some(None) => alone.to_owned(),
        Some(Some(mode)) => mode.split('_').map(humanize).collect::<String>(),
    };
    let (kind, variant) = (
        syn::Ident::new(kind, Span::call_site()),
        syn::Ident::new(&variant, Span::call_site()),
    );
    quote!(#tg::#kind::#variant)
}

/// The display title made from a tool name: `search_orders` reads "Search orders".
fn humanize(name: &str) -> String {
    let words = name.replace(['_', '-', '.'], " ");
    let mut chars = words.trim().chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The `T` of a parameter written `State<T>` or `Extension<T>` (by any path), which each call clones.
fn shared_type(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "State" && last.ident != "Extension" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return None;
    };
    match arguments.args.first() {
        Some(syn::GenericArgument::Type(shared)) if arguments.args.len() == 1 => Some(shared),
        _ => None,
    }
}

/// `tokens` with every span set to `span`, so that an expression built from them reports errors there.
fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}

/// `Some(value)` or `None`, spelled through `__private` so that the user's own `Option` cannot interfere.
fn option(tg: &TokenStream, value: Option<impl ToTokens>) -> TokenStream {
    match value {
        Some(v) => quote!(#tg::Some(#v)),
        None => quote!(#tg::None),
    }
}

/// The `ParamSpec` literal of one parameter; its kind and schema come from the type's `Param` impl.
fn param_spec(tg: &TokenStream, param: &Param) -> TokenStream {
    let ty = &param.ty;
    let name = option(tg, param.name.as_ref());
    let description = param.docs.text();
    let arg = &param.arg;
    let default = match &arg.default {
        Some(expr) => {
            // Number and bool literals take the parameter's type directly; other values convert with `Into`.
            let typed = match expr {
                Expr::Lit(ExprLit {
                    lit: Lit::Int(_) | Lit::Float(_) | Lit::Bool(_),
                    ..
                }) => quote!(#expr),
                _ => quote_spanned!(expr.span()=> ::core::convert::Into::into(#expr)),
            };
            quote_spanned! {expr.span()=>
                #tg::Some(|| {
                    let value: #ty = #typed;
                    #tg::default_value(value)
                })
            }
        }
        None => quote!(#tg::None),
    };
    let number = |e: &Option<Expr>, as_ty: TokenStream| match e {
        Some(e) => quote_spanned!(e.span()=> #tg::Some((#e) as #as_ty)),
        None => quote!(#tg::None),
    };
    let minimum = number(&arg.minimum, quote!(f64));
    let maximum = number(&arg.maximum, quote!(f64));
    let min_length = number(&arg.min_length, quote!(u64));
    let max_length = number(&arg.max_length, quote!(u64));
    let pattern = option(tg, arg.pattern.as_ref());
    let one_of = match &arg.one_of {
        Some(choices) => {
            let values = choices.iter().map(|c| literal(tg, c));
            quote!(&[#(#values),*])
        }
        None => quote!(&[]),
    };
    quote_spanned! {ty.span()=>
        #tg::ParamSpec::new(#tg::ParamFields {
            name: #name,
            description: #description,
            kind: <#ty as #tg::Param>::KIND,
            schema: <#ty as #tg::Param>::schema,
            requirement: <#ty as #tg::Param>::requirement,
            default: #default,
            minimum: #minimum,
            maximum: #maximum,
            min_length: #min_length,
            max_length: #max_length,
            pattern: #pattern,
            one_of: #one_of,
        })
    }
}

/// A `one_of` literal as the runtime's `Literal`.
fn literal(tg: &TokenStream, choice: &Choice) -> TokenStream {
    match choice {
        Choice::Str(s) => quote!(#tg::Literal::Str(#s)),
        Choice::Int(i) => quote!(#tg::Literal::Int(#i)),
        Choice::Float(f) => quote!(#tg::Literal::Float(#f)),
        Choice::Bool(b) => quote!(#tg::Literal::Bool(#b)),
    }
}

//! Checks across keys, on values, and on the function's shape; each error lands on the offending token.

use syn::{FnArg, LitStr, Signature, Type};

use crate::ast::ToolFn;
use crate::attr::{Errors, KEYS, ToolAttr, attribute_span, nearest};

pub(crate) fn check(attr: &ToolAttr, tool: &ToolFn, errors: &mut Errors) {
    check_access(attr, errors);
    check_values(attr, errors);
    check_signature(&tool.item.sig, errors);
    check_output(&tool.output, errors);
    if attr.description.is_none() && tool.docs.is_empty() {
        errors.at(
            tool.ident(),
            "a `#[tool]` needs a description for the model: add a `///` doc comment saying what it does and returns",
        );
    }
}

/// Whether an access key was written, even misspelled or with a bad value: the "declare access" error
/// would only repeat the error already reported for it.
fn access_attempted(attr: &ToolAttr) -> bool {
    const ACCESS: [&str; 3] = ["ability", "public", "enforced_downstream"];
    attr.written.iter().any(|key| {
        ACCESS.contains(&key.as_str()) || ACCESS.contains(&nearest(key, KEYS).unwrap_or(""))
    })
}

/// Permissions fail closed: `public`, or `ability` and/or `enforced_downstream`.
fn check_access(attr: &ToolAttr, errors: &mut Errors) {
    match (&attr.ability, &attr.public, &attr.enforced_downstream) {
        (None, None, None) if !access_attempted(attr) => errors.at(
            attribute_span(),
            "a `#[tool]` must declare who may run it: add `ability = \"...\"` (the ability a caller needs), \
             `public` (anyone may run it) or `enforced_downstream` (its backend checks each caller's rights)",
        ),
        (Some(_), Some(public), _) => {
            errors.at(public, "`public` and `ability` cannot both be set: a public tool needs no ability")
        }
        (None, Some(_), Some(downstream)) => errors.at(
            downstream,
            "`enforced_downstream` and `public` cannot both be set: `public` says the tool reads no business \
             data, so anyone may run it; `enforced_downstream` says its backend checks each caller's rights, \
             so it needs a caller with an identity. Remove one",
        ),
        _ => {}
    }
    if let (Some(preview), Some(_)) = (&attr.preview, &attr.read_only) {
        errors.at(
            &preview.key,
            "`preview` is for write tools: a `read_only` tool writes nothing to preview; remove `preview` or `read_only`",
        );
    }
    if let (Some(_), Some(categories)) = (&attr.category, &attr.categories) {
        errors.at(
            &categories.key,
            "use either `category` or `categories`, not both",
        );
    }
}

fn check_values(attr: &ToolAttr, errors: &mut Errors) {
    for ability in attr.ability.iter().flat_map(|a| &a.value) {
        check_label(ability, "ability", "orders.view", errors);
    }
    if let Some(capability) = &attr.capability {
        check_label(&capability.value, "capability", "web_search", errors);
    }
    let categories = attr
        .category
        .iter()
        .map(|c| &c.value)
        .chain(attr.categories.iter().flat_map(|c| &c.value));
    for category in categories {
        check_label(category, "category", "orders", errors);
    }
    if let Some(max_runs) = &attr.max_runs {
        match max_runs.value.base10_parse::<u32>() {
            Ok(0) => errors.at(
                &max_runs.value,
                "`max_runs` must be at least 1; remove it for no limit",
            ),
            Ok(_) => {}
            Err(_) => errors.at(
                &max_runs.value,
                "`max_runs` must be a whole number from 1 to 4294967295",
            ),
        }
    }
    if let Some(timeout) = attr
        .timeout
        .as_ref()
        .filter(|t| parse_duration_ms(&t.value.value()).is_none())
    {
        errors.at(
            &timeout.value,
            "`timeout` must be a positive duration such as `\"500ms\"`, `\"30s\"` or `\"2m\"`",
        );
    }
}

/// Abilities, capabilities and categories: non-empty, no spaces, a small set of separators.
fn check_label(lit: &LitStr, key: &str, example: &str, errors: &mut Errors) {
    let value = lit.value();
    if value.is_empty() {
        errors.at(
            lit,
            format!("`{key}` must not be empty: `{key} = \"{example}\"`"),
        );
    } else if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
    {
        errors.at(
            lit,
            format!("{key} `{value}` may use only ASCII letters, digits, `.`, `_`, `-` and `:`, e.g. `\"{example}\"`"),
        );
    }
}

fn check_signature(sig: &Signature, errors: &mut Errors) {
    if let Some(constness) = &sig.constness {
        errors.at(
            constness,
            "`#[tool]` functions cannot be `const fn`; write `async fn`",
        );
    } else if sig.asyncness.is_none() {
        errors.at(sig.fn_token, "`#[tool]` functions must be `async fn`");
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.at(unsafety, "`#[tool]` functions cannot be `unsafe`");
    }
    if let Some(abi) = &sig.abi {
        errors.at(abi, "`#[tool]` functions cannot declare an ABI");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            &sig.generics,
            "`#[tool]` functions cannot be generic: a tool is one concrete function; write one tool per type",
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.at(variadic, "`#[tool]` functions cannot be variadic");
    }
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => errors.at(
                receiver,
                "`#[tool]` goes on free functions, not methods: move the function out of the `impl` block \
                 and take shared data as a `State<T>` parameter",
            ),
            FnArg::Typed(typed) => match &*typed.ty {
                Type::ImplTrait(ty) => {
                    errors.at(ty, "`impl Trait` parameters make a function generic; name a concrete type");
                }
                Type::Reference(reference) => {
                    errors.at(reference.and_token, borrowed_parameter(&reference.elem));
                }
                _ => {}
            },
        }
    }
}

/// What to take instead of a borrowed parameter: arguments are owned, decoded from a call's JSON that is
/// gone once the tool runs.
fn borrowed_parameter(elem: &Type) -> String {
    let owned = match elem {
        Type::Path(path) if path.path.is_ident("str") => "`String` (or `Cow<'static, str>`)",
        Type::Slice(_) => "a `Vec`",
        _ => "the value itself, without the `&`",
    };
    format!(
        "tool parameters are owned values, decoded from the call's JSON: take {owned} instead of a reference"
    )
}

fn check_output(output: &Type, errors: &mut Errors) {
    if let Type::ImplTrait(ty) = output {
        errors.at(ty, "a `#[tool]` must name its return type: `impl Trait` cannot be encoded; name a concrete type");
    }
}

/// `"500ms"`, `"30s"`, `"2m"`, `"1h"` in milliseconds; `None` for anything else or zero.
pub(crate) fn parse_duration_ms(text: &str) -> Option<u64> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    number.checked_mul(scale).filter(|ms| *ms > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("500ms"), Some(500));
        assert_eq!(parse_duration_ms("30s"), Some(30_000));
        assert_eq!(parse_duration_ms("2m"), Some(120_000));
        assert_eq!(parse_duration_ms("0s"), None);
        assert_eq!(parse_duration_ms("5"), None);
        assert_eq!(parse_duration_ms("s"), None);
        assert_eq!(parse_duration_ms("1d"), None);
    }
}

//! Parsing of `#[arg(...)]` on a tool's parameter: its JSON name, default and constraints.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, ExprArray, ExprLit, Lit, LitBool, LitFloat, LitInt, LitStr};

use crate::attr::{Errors, nearest, once};

const KEYS: &[&str] = &["name", "default", "range", "length", "pattern", "one_of"];

/// What `#[arg(...)]` said about one parameter.
#[derive(Default)]
pub(crate) struct ArgAttr {
    pub(crate) name: Option<LitStr>,
    pub(crate) default: Option<Expr>,
    pub(crate) minimum: Option<Expr>,
    pub(crate) maximum: Option<Expr>,
    pub(crate) min_length: Option<Expr>,
    pub(crate) max_length: Option<Expr>,
    pub(crate) pattern: Option<LitStr>,
    pub(crate) one_of: Option<Vec<Choice>>,
}

/// A literal of `one_of = [...]`, checked against the parameter's schema when the registry is built.
pub(crate) enum Choice {
    Str(LitStr),
    Int(LitInt),
    Float(LitFloat),
    Bool(LitBool),
}

impl ArgAttr {
    /// Reads every `#[arg(...)]` among `attrs`; mistakes land in `errors`.
    pub(crate) fn parse(attrs: &[Attribute], errors: &mut Errors) -> Self {
        let mut out = ArgAttr::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("arg")) {
            if let Err(e) = attr.parse_nested_meta(|meta| out.key(&meta, errors)) {
                errors.push(e);
            }
        }
        out
    }

    fn key(&mut self, meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<()> {
        let Some(key) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(meta.error("unknown `#[arg]` argument"));
        };
        match key.as_str() {
            "name" => set(&mut self.name, meta.value()?.parse()?, meta, errors),
            "default" => set(&mut self.default, meta.value()?.parse()?, meta, errors),
            "pattern" => set(&mut self.pattern, meta.value()?.parse()?, meta, errors),
            "one_of" => {
                if let Some(choices) = choices(&meta.value()?.parse()?, errors) {
                    set(&mut self.one_of, choices, meta, errors);
                }
            }
            "range" => meta.parse_nested_meta(|bound| {
                bounds(
                    &bound,
                    &mut self.minimum,
                    &mut self.maximum,
                    errors,
                    "range(min = 1, max = 50)",
                )
            })?,
            "length" => meta.parse_nested_meta(|bound| {
                bounds(
                    &bound,
                    &mut self.min_length,
                    &mut self.max_length,
                    errors,
                    "length(min = 1, max = 200)",
                )
            })?,
            other => {
                let hint = nearest(other, KEYS)
                    .map(|k| format!("; did you mean `{k}`?"))
                    .unwrap_or_else(|| {
                        format!(
                            "; expected one of {}",
                            KEYS.iter()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    });
                errors.at(
                    &meta.path,
                    format!("unknown `#[arg]` argument `{other}`{hint}"),
                );
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<Expr>()?;
                } else if meta.input.peek(syn::token::Paren) {
                    meta.parse_nested_meta(|inner| {
                        inner.value().and_then(|v| v.parse::<Expr>()).map(drop)
                    })?;
                }
            }
        }
        Ok(())
    }
}

fn set<T>(slot: &mut Option<T>, value: T, meta: &ParseNestedMeta<'_>, errors: &mut Errors) {
    once(slot, value, &meta.path, "#[arg]", "", errors);
}

/// The literals of `one_of = [...]`, or `None` after an error at each element that is not one.
fn choices(array: &ExprArray, errors: &mut Errors) -> Option<Vec<Choice>> {
    let mut choices = Vec::with_capacity(array.elems.len());
    for elem in &array.elems {
        let choice = match elem {
            Expr::Lit(ExprLit { lit, .. }) => match lit {
                Lit::Str(s) => Some(Choice::Str(s.clone())),
                Lit::Int(i) => Some(Choice::Int(i.clone())),
                Lit::Float(f) => Some(Choice::Float(f.clone())),
                Lit::Bool(b) => Some(Choice::Bool(b.clone())),
                _ => None,
            },
            _ => None,
        };
        match choice {
            Some(choice) => choices.push(choice),
            None => errors.at(
                elem,
                "`one_of` takes literals: `one_of = [\"open\", \"shipped\"]`",
            ),
        }
    }
    (choices.len() == array.elems.len()).then_some(choices)
}

fn bounds(
    bound: &ParseNestedMeta<'_>,
    min: &mut Option<Expr>,
    max: &mut Option<Expr>,
    errors: &mut Errors,
    example: &str,
) -> syn::Result<()> {
    let value: Expr = bound.value()?.parse()?;
    if !is_number(&value) {
        errors.at(&value, format!("expected a number: `{example}`"));
    }
    if bound.path.is_ident("min") {
        set(min, value, bound, errors);
    } else if bound.path.is_ident("max") {
        set(max, value, bound, errors);
    } else {
        errors.at(&bound.path, format!("expected `min` or `max`: `{example}`"));
    }
    Ok(())
}

/// A numeric literal, possibly negated.
fn is_number(expr: &Expr) -> bool {
    match expr {
        Expr::Lit(lit) => matches!(lit.lit, Lit::Int(_) | Lit::Float(_)),
        Expr::Unary(unary) => matches!(unary.op, syn::UnOp::Neg(_)) && is_number(&unary.expr),
        _ => false,
    }
}

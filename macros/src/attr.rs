//! Parsing of the `#[tool(...)]` arguments into [`ToolAttr`], collecting every mistake in one pass.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitInt, LitStr, Path, Token};

/// Every key `#[tool]` accepts, in the order the error messages list them.
pub(crate) const KEYS: &[&str] = &[
    "ability",
    "public",
    "enforced_downstream",
    "read_only",
    "preview",
    "capability",
    "name",
    "title",
    "description",
    "category",
    "categories",
    "system",
    "overrides_builtin",
    "max_runs",
    "defer",
    "task",
    "idempotent",
    "open_world",
    "timeout",
    "crate",
];

/// The modes `defer = "..."` takes, as `toolgate::Defer` names them in lower case.
pub(crate) const DEFER_MODES: &[&str] = &["auto", "always", "never"];

/// The modes `task = "..."` takes, as `toolgate::TaskSupport` names them in lower case.
pub(crate) const TASK_MODES: &[&str] = &["optional", "required", "after_questions"];

/// A key that was written, with its value; the key's span is kept for errors about the key itself.
pub(crate) struct KeyValue<T> {
    pub(crate) key: Path,
    pub(crate) value: T,
}

/// The parsed `#[tool(...)]` arguments. Values keep their tokens so later errors point at them.
#[derive(Default)]
pub(crate) struct ToolAttr {
    pub(crate) ability: Option<KeyValue<Vec<LitStr>>>,
    pub(crate) public: Option<Path>,
    /// `enforced_downstream`: the tool's backend checks each caller's rights.
    pub(crate) enforced_downstream: Option<Path>,
    pub(crate) read_only: Option<Path>,
    pub(crate) preview: Option<KeyValue<Path>>,
    pub(crate) capability: Option<KeyValue<LitStr>>,
    pub(crate) name: Option<KeyValue<LitStr>>,
    pub(crate) title: Option<KeyValue<LitStr>>,
    pub(crate) description: Option<KeyValue<LitStr>>,
    pub(crate) category: Option<KeyValue<LitStr>>,
    pub(crate) categories: Option<KeyValue<Vec<LitStr>>>,
    pub(crate) system: Option<Path>,
    /// `overrides_builtin`: replaces the built-in tool of the same name.
    pub(crate) overrides_builtin: Option<Path>,
    pub(crate) max_runs: Option<KeyValue<LitInt>>,
    /// `defer` alone, or `defer = "auto" | "never" | "always"`.
    pub(crate) defer: Option<KeyValue<Option<LitStr>>>,
    /// `task` alone (it may run as a task), or `task = "optional" | "required" | "after_questions"`.
    pub(crate) task: Option<KeyValue<Option<LitStr>>>,
    pub(crate) idempotent: Option<Path>,
    pub(crate) open_world: Option<Path>,
    pub(crate) timeout: Option<KeyValue<LitStr>>,
    pub(crate) krate: Option<KeyValue<Path>>,
    /// Every key as written, known or not, with a good value or not: for checks across keys.
    pub(crate) written: Vec<String>,
}

/// Collects errors so one build reports every mistake (serde's `Ctxt`).
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn at(&mut self, span: impl Spanned, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span.span(), message));
    }

    pub(crate) fn into_result(mut self) -> Result<(), syn::Error> {
        self.0.take().map_or(Ok(()), Err)
    }
}

/// Errors collected and then dropped unreported would vanish from the build: a bug in the macro.
impl Drop for Errors {
    fn drop(&mut self) {
        if self.0.is_some() && !std::thread::panicking() {
            panic!("#[tool] collected errors it never reported");
        }
    }
}

impl ToolAttr {
    /// Parses the attribute's tokens; syntax errors and every bad key or value land in `errors`.
    pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Self {
        let mut attr = ToolAttr::default();
        let parser = syn::meta::parser(|meta| {
            attr.key(meta, errors);
            Ok(())
        });
        if let Err(e) = syn::parse::Parser::parse2(parser, tokens) {
            errors.push(e);
        }
        attr
    }

    fn key(&mut self, meta: ParseNestedMeta<'_>, errors: &mut Errors) {
        let value = if meta.input.peek(Token![=]) {
            match meta.value().and_then(|v| v.parse::<Expr>()) {
                Ok(expr) => Some(expr),
                Err(e) => return errors.push(e),
            }
        } else {
            None
        };
        let path = meta.path;
        let Some(key) = path.get_ident().map(ToString::to_string) else {
            return errors.at(&path, unknown_key(&quote::quote!(#path).to_string()));
        };
        self.written.push(key.clone());
        let v = ValueParser {
            key: &path,
            value: value.as_ref(),
            errors,
        };
        match key.as_str() {
            "ability" => put(&mut self.ability, &path, v.strings(), errors),
            "public" => put(&mut self.public, &path, v.flag(), errors),
            "enforced_downstream" => put(&mut self.enforced_downstream, &path, v.flag(), errors),
            "read_only" => put(&mut self.read_only, &path, v.flag(), errors),
            "preview" => put(
                &mut self.preview,
                &path,
                v.path("preview = preview_fn"),
                errors,
            ),
            "capability" => put(&mut self.capability, &path, v.string(), errors),
            "name" => put(&mut self.name, &path, v.string(), errors),
            "title" => put(&mut self.title, &path, v.string(), errors),
            "description" => put(&mut self.description, &path, v.string(), errors),
            "category" => put(&mut self.category, &path, v.string(), errors),
            "categories" => put(&mut self.categories, &path, v.strings(), errors),
            "system" => put(&mut self.system, &path, v.flag(), errors),
            "overrides_builtin" => put(&mut self.overrides_builtin, &path, v.flag(), errors),
            "max_runs" => put(&mut self.max_runs, &path, v.int(), errors),
            "defer" => {
                let example = "defer` (always deferred), `defer = \"auto\"` or `defer = \"never\"";
                put(&mut self.defer, &path, v.mode(DEFER_MODES, example), errors);
            }
            "task" => {
                let example = "task` (it may run as a task), `task = \"required\"` or \
                               `task = \"after_questions\"";
                put(&mut self.task, &path, v.mode(TASK_MODES, example), errors);
            }
            "idempotent" => put(&mut self.idempotent, &path, v.flag(), errors),
            "open_world" => put(&mut self.open_world, &path, v.flag(), errors),
            "timeout" => {
                let duration = v.string_like(
                    "timeout = \"2s\"",
                    "a duration in a string, with its unit (ms, s, m or h)",
                );
                put(&mut self.timeout, &path, duration, errors);
            }
            "crate" => put(&mut self.krate, &path, v.path("crate = ::toolgate"), errors),
            other => errors.at(&path, unknown_key(other)),
        }
    }
}

/// Stores a parsed key, refusing a second occurrence of it.
fn put<T: FromKey>(
    slot: &mut Option<T>,
    key: &Path,
    parsed: Option<T::Value>,
    errors: &mut Errors,
) {
    let Some(value) = parsed else { return };
    let hint = if key.is_ident("ability") {
        "; to require several abilities write `ability = [\"a\", \"b\"]`"
    } else {
        ""
    };
    once(
        slot,
        T::make(key.clone(), value),
        key,
        "#[tool]",
        hint,
        errors,
    );
}

/// Stores `value` unless `key` was written before in the `attribute`, which is an error at the second one.
pub(crate) fn once<T>(
    slot: &mut Option<T>,
    value: T,
    key: &Path,
    attribute: &str,
    hint: &str,
    errors: &mut Errors,
) {
    if slot.is_some() {
        let name = quote::quote!(#key).to_string();
        errors.at(
            key,
            format!("duplicate `{attribute}` argument `{name}`{hint}"),
        );
    } else {
        *slot = Some(value);
    }
}

/// What a slot holds, made from its key: a bare flag keeps its path, a valued key a [`KeyValue`].
trait FromKey {
    type Value;
    fn make(key: Path, value: Self::Value) -> Self;
}

impl FromKey for Path {
    type Value = ();
    fn make(key: Path, (): ()) -> Self {
        key
    }
}

impl<T> FromKey for KeyValue<T> {
    type Value = T;
    fn make(key: Path, value: T) -> Self {
        KeyValue { key, value }
    }
}

/// A key's optional `= value`, with the conversions each key needs and their error messages.
struct ValueParser<'a> {
    key: &'a Path,
    value: Option<&'a Expr>,
    errors: &'a mut Errors,
}

impl ValueParser<'_> {
    fn name(&self) -> String {
        let key = self.key;
        quote::quote!(#key).to_string()
    }

    fn flag(self) -> Option<()> {
        match self.value {
            None => Some(()),
            Some(v) => {
                let name = self.name();
                self.errors.at(
                    v,
                    format!("`{name}` is a flag and takes no value; write `{name}`"),
                );
                None
            }
        }
    }

    /// The key alone or with one of its `modes` in a string; `example` shows both.
    fn mode(self, modes: &[&str], example: &str) -> Option<Option<LitStr>> {
        let name = self.name();
        match self.value {
            None => Some(None),
            Some(Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            })) if modes.contains(&s.value().as_str()) => Some(Some(s.clone())),
            Some(other) => {
                self.errors.at(
                    other,
                    format!("expected `{name}` alone or one of its modes: `{example}`"),
                );
                None
            }
        }
    }

    fn missing(self, example: &str) {
        let name = self.name();
        self.errors
            .at(self.key, format!("`{name}` needs a value: `{example}`"));
    }

    fn string(self) -> Option<LitStr> {
        let example = format!("{} = \"...\"", self.name());
        self.string_like(&example, "a string")
    }

    /// A string literal, described as `what` and shown with `example` when the value is something else.
    fn string_like(self, example: &str, what: &str) -> Option<LitStr> {
        match self.value {
            None => {
                self.missing(example);
                None
            }
            Some(Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            })) => Some(s.clone()),
            Some(other) => {
                let name = self.name();
                self.errors.at(
                    other,
                    format!("expected `{name}` to be {what}: `{example}`"),
                );
                None
            }
        }
    }

    fn strings(self) -> Option<Vec<LitStr>> {
        let name = self.name();
        let example = format!("{name} = \"...\"` or `{name} = [\"...\", \"...\"]");
        let expected =
            format!("expected `{name}` to be a string or an array of strings: `{example}`");
        match self.value {
            None => {
                self.missing(&example);
                None
            }
            Some(Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            })) => Some(vec![s.clone()]),
            Some(Expr::Array(array)) => {
                let mut out = Vec::with_capacity(array.elems.len());
                for elem in &array.elems {
                    match elem {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(s), ..
                        }) => out.push(s.clone()),
                        other => self.errors.at(other, &expected),
                    }
                }
                if out.is_empty() && array.elems.is_empty() {
                    self.errors
                        .at(array, format!("`{name}` needs at least one entry"));
                }
                (out.len() == array.elems.len() && !out.is_empty()).then_some(out)
            }
            Some(other) => {
                self.errors.at(other, expected);
                None
            }
        }
    }

    fn int(self) -> Option<LitInt> {
        let example = format!("{} = 3", self.name());
        match self.value {
            None => {
                self.missing(&example);
                None
            }
            Some(Expr::Lit(ExprLit {
                lit: Lit::Int(i), ..
            })) => Some(i.clone()),
            Some(other) => {
                let name = self.name();
                self.errors.at(
                    other,
                    format!("expected `{name}` to be a whole number: `{example}`"),
                );
                None
            }
        }
    }

    fn path(self, example: &str) -> Option<Path> {
        match self.value {
            None => {
                self.missing(example);
                None
            }
            Some(Expr::Path(p)) if p.qself.is_none() => Some(p.path.clone()),
            Some(other) => {
                let name = self.name();
                self.errors.at(
                    other,
                    format!("expected `{name}` to be a path: `{example}`"),
                );
                None
            }
        }
    }
}

/// The message for a key `#[tool]` does not know, naming the nearest valid key when one is close.
pub(crate) fn unknown_key(key: &str) -> String {
    match nearest(key, KEYS) {
        Some(near) => format!("unknown `#[tool]` argument `{key}`; did you mean `{near}`?"),
        None => format!(
            "unknown `#[tool]` argument `{key}`; expected one of {}",
            KEYS.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo.
pub(crate) fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (distance(word, c), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The span of the whole attribute, for errors about a key that is missing.
pub(crate) fn attribute_span() -> Span {
    Span::call_site()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(tokens: TokenStream) -> (ToolAttr, Result<(), syn::Error>) {
        let mut errors = Errors::default();
        let attr = ToolAttr::parse(tokens, &mut errors);
        (attr, errors.into_result())
    }

    #[test]
    fn parses_every_kind_of_value() {
        let (attr, result) = parse(quote::quote!(
            ability = ["a.view", "b.view"],
            read_only,
            capability = "web_search",
            max_runs = 3,
            categories = ["x", "y"],
            timeout = "5s",
            crate = ::tg
        ));
        assert!(result.is_ok());
        let abilities: Vec<String> = attr
            .ability
            .unwrap()
            .value
            .iter()
            .map(LitStr::value)
            .collect();
        assert_eq!(abilities, ["a.view", "b.view"]);
        assert!(attr.read_only.is_some() && attr.public.is_none());
        assert_eq!(attr.capability.unwrap().value.value(), "web_search");
        assert_eq!(
            attr.max_runs.unwrap().value.base10_parse::<u32>().unwrap(),
            3
        );
        assert_eq!(attr.categories.unwrap().value.len(), 2);
        assert_eq!(attr.timeout.unwrap().value.value(), "5s");
        assert!(attr.krate.is_some());
    }

    #[test]
    fn collects_every_error_in_one_pass() {
        let (_, result) = parse(quote::quote!(
            abilty = "a",
            read_only = true,
            name = 3,
            public,
            public
        ));
        let messages: Vec<String> = result
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            messages,
            [
                "unknown `#[tool]` argument `abilty`; did you mean `ability`?",
                "`read_only` is a flag and takes no value; write `read_only`",
                "expected `name` to be a string: `name = \"...\"`",
                "duplicate `#[tool]` argument `public`",
            ]
        );
    }

    #[test]
    fn suggests_only_close_keys() {
        assert_eq!(nearest("readonly", KEYS), Some("read_only"));
        assert_eq!(nearest("caps", KEYS), None);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}

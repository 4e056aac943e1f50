//! [`Param`]: how each parameter of a tool function gets its value, and whether it is in the schema.
//!
//! A parameter is one of three kinds, decided by its type's `Param` impl, never by its name:
//! - an **argument** (any `Deserialize + JsonSchema` type): a property of the input schema named after the
//!   parameter, optional when its type accepts `null` (as `Option<T>` and [`Limit`](crate::Limit) do);
//! - the **whole input** ([`Input<T>`]): the input schema is `T`'s schema;
//! - an **injected** value ([`State`](crate::State), [`Caller`](crate::Caller), ...): not in the schema.

use std::any::TypeId;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ErrorKind, ToolError};

use super::CallParts;

/// What role a parameter plays: an argument, the whole input, or an injected value (see [`Param`]).
///
/// ```
/// use toolgate::{Caller, Input};
/// use toolgate::param::{Param, ParamKind};
///
/// assert_eq!(<String as Param>::KIND, ParamKind::Argument);
/// assert_eq!(<Input<String> as Param>::KIND, ParamKind::Input);
/// assert_eq!(<Caller as Param>::KIND, ParamKind::Injected);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A property of the input schema.
    Argument,
    /// The whole input, as one struct.
    Input,
    /// A value supplied by the runtime, not by the caller.
    Injected,
}

/// A type that can be a parameter of a `#[tool]` function.
///
/// Arguments (`Deserialize + JsonSchema` types) and toolgate's injectables implement it already. To inject a
/// value of your own, implement it with `KIND = ParamKind::Injected`:
///
/// ```
/// use toolgate::ToolError;
/// use toolgate::param::{CallParts, Param, ParamKind, ParamSpec};
///
/// /// The tenant of the caller, injected into tools that ask for it.
/// struct Tenant(String);
///
/// impl Param for Tenant {
///     const KIND: ParamKind = ParamKind::Injected;
///
///     fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
///         let id = parts.caller().id();
///         Ok(Tenant(id.split('@').nth(1).unwrap_or("default").to_owned()))
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of a `#[tool]`",
    label = "not an argument and not injectable",
    note = "an argument's type must implement `serde::Deserialize` and `schemars::JsonSchema` (derive both)",
    note = "shared application data is injected as `State<T>`; other injectables: `Caller`, `Invocation`, \
            `Settings<T>`, `Progress`, `Log`, `Cancellation`, `Ask`, or your own type implementing `toolgate::param::Param`"
)]
pub trait Param: Sized + Send + 'static {
    /// The parameter's role.
    const KIND: ParamKind;

    /// Produces the value for one call.
    ///
    /// # Errors
    /// A [`ToolError`] when the value cannot be produced; the tool then does not run.
    fn extract(parts: &mut CallParts<'_>, spec: &'static ParamSpec) -> Result<Self, ToolError>;

    /// The schema of an argument or of the whole input; `None` for injected values.
    fn schema(generator: &mut SchemaGenerator) -> Option<ArgSchema> {
        let _ = generator;
        None
    }

    /// What the registry must hold for this parameter to be extracted, checked when it is built.
    fn requirement() -> Option<Requirement> {
        None
    }
}

/// The schema of an argument, and whether the caller may leave it out.
///
/// ```
/// use schemars::SchemaGenerator;
/// use toolgate::param::Param;
///
/// let mut generator = SchemaGenerator::default();
/// let required = <u32 as Param>::schema(&mut generator).unwrap();
/// let optional = <Option<u32> as Param>::schema(&mut generator).unwrap();
/// assert!(!required.optional && optional.optional);
/// assert_eq!(required.schema.get("type").unwrap(), "integer");
/// ```
#[derive(Debug, Clone)]
pub struct ArgSchema {
    /// The JSON Schema.
    pub schema: Schema,
    /// `true` when the argument may be absent.
    pub optional: bool,
}

/// A dependency of an injected parameter, such as the state a [`State<T>`](crate::State) reads.
///
/// An injectable of your own that reads state declares it, so a registry without that state fails to build
/// instead of failing calls:
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::param::{CallParts, Param, ParamKind, ParamSpec, Requirement};
///
/// #[derive(Clone)]
/// struct Pool(&'static str);
///
/// /// A connection from the pool in the registry's state.
/// struct Conn(&'static str);
///
/// impl Param for Conn {
///     const KIND: ParamKind = ParamKind::Injected;
///
///     fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
///         let pool = parts.state::<Pool>().ok_or_else(|| ToolError::new("no pool"))?;
///         Ok(Conn(pool.0))
///     }
///
///     fn requirement() -> Option<Requirement> {
///         Some(Requirement::state::<Pool>())
///     }
/// }
///
/// /// Which database?
/// #[tool(public, read_only)]
/// async fn database(conn: Conn) -> &'static str {
///     conn.0
/// }
///
/// assert!(Registry::builder().build().is_err(), "no Pool: refused at build time");
/// assert!(Registry::builder().state(Pool("orders")).build().is_ok());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Requirement {
    pub(crate) kind: RequirementKind,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum RequirementKind {
    State {
        type_id: fn() -> TypeId,
        type_name: &'static str,
    },
    /// The tool asks the client for input, so its calls keep their arguments to seal the request state.
    Asks,
    /// The tool takes settings of this schema ([`Settings<T>`](crate::Settings)).
    Settings {
        schema: fn(&mut SchemaGenerator) -> Schema,
    },
    /// The tool may send log messages or progress ([`Log`](crate::Log), [`Progress`](crate::Progress)).
    Reports,
    /// The tool reads what its caller or transport attached ([`Extension<T>`](crate::Extension)).
    Extension,
    /// One of toolgate's own injectables that needs nothing more ([`Caller`](crate::Caller),
    /// [`Invocation`](crate::Invocation), [`Cancellation`](crate::Cancellation),
    /// [`Approval`](crate::param::Approval)). An injectable of the application's own says nothing, and
    /// may use anything a call carries.
    Nothing,
}

impl Requirement {
    /// The registry must hold state of type `T` (added with [`RegistryBuilder::state`](crate::RegistryBuilder::state)).
    pub fn state<T: 'static>() -> Self {
        Requirement {
            kind: RequirementKind::State {
                type_id: TypeId::of::<T>,
                type_name: std::any::type_name::<T>(),
            },
        }
    }

    /// The tool takes [`Settings<T>`](crate::Settings): `T`'s schema is published, and settings that do
    /// not match it are refused.
    pub(crate) fn settings<T: JsonSchema>() -> Self {
        Requirement {
            kind: RequirementKind::Settings {
                schema: |generator| generator.root_schema_for::<T>(),
            },
        }
    }

    /// The tool takes an [`Ask`](crate::Ask).
    pub(crate) fn asks() -> Self {
        Requirement {
            kind: RequirementKind::Asks,
        }
    }

    /// A requirement of one of toolgate's own parameters that says only what it uses of a call.
    pub(crate) const fn uses(kind: RequirementKind) -> Self {
        Requirement { kind }
    }
}

/// What a `#[tool]` knows of one of its parameters: written by the macro, handed to [`Param::extract`].
///
/// An argument-like type of your own reads its value under [`name`](Self::name):
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::param::{ArgSchema, CallParts, Param, ParamKind, ParamSpec};
///
/// /// A comma-separated list, given as one string.
/// struct Tags(Vec<String>);
///
/// impl Param for Tags {
///     const KIND: ParamKind = ParamKind::Argument;
///
///     fn extract(parts: &mut CallParts<'_>, spec: &'static ParamSpec) -> Result<Self, ToolError> {
///         let text = parts.arguments().get(spec.name()).and_then(|v| v.as_str()).unwrap_or_default();
///         Ok(Tags(text.split(',').map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect()))
///     }
///
///     fn schema(generator: &mut schemars::SchemaGenerator) -> Option<ArgSchema> {
///         Some(ArgSchema { schema: generator.subschema_for::<String>(), optional: true })
///     }
/// }
///
/// /// Count the tags.
/// #[tool(public, read_only)]
/// async fn count_tags(
///     /// Tags, separated by commas.
///     tags: Tags,
/// ) -> usize {
///     tags.0.len()
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build()?;
/// let tool = registry.get("count_tags").unwrap();
/// assert_eq!(tool.input_schema()["properties"]["tags"]["description"], "Tags, separated by commas.");
/// let outcome = registry.call(&Caller::anonymous(), "count_tags", serde_json::json!({ "tags": "a, b" })).await;
/// assert_eq!(outcome.into_result().text_for_model(), "2");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct ParamSpec {
    pub(crate) fields: ParamFields,
}

impl ParamSpec {
    /// Not public API: the spec the macro writes.
    #[doc(hidden)]
    pub const fn new(fields: ParamFields) -> Self {
        ParamSpec { fields }
    }

    /// The parameter's name in the arguments object: its own name, or `input` for [`Input<T>`].
    pub fn name(&self) -> &'static str {
        self.fields.name.unwrap_or("input")
    }

    /// Its doc comment, which becomes the argument's description (empty when it has none).
    pub fn description(&self) -> &'static str {
        self.fields.description
    }

    /// Its role, from its type's [`Param::KIND`].
    pub fn kind(&self) -> ParamKind {
        self.fields.kind
    }
}

/// Not public API: the fields of a [`ParamSpec`], as the `#[tool]` macro writes them.
#[doc(hidden)]
#[derive(Debug)]
pub struct ParamFields {
    pub name: Option<&'static str>,
    pub description: &'static str,
    pub kind: ParamKind,
    pub schema: fn(&mut SchemaGenerator) -> Option<ArgSchema>,
    pub requirement: fn() -> Option<Requirement>,
    pub default: Option<fn() -> Value>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<&'static str>,
    pub one_of: &'static [Literal],
}

/// Not public API: a literal from `#[arg(one_of = [...])]`.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Literal {
    Str(&'static str),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Literal {
    pub(crate) fn to_value(self) -> Value {
        match self {
            Literal::Str(s) => Value::from(s),
            Literal::Int(i) => Value::from(i),
            Literal::Float(f) => Value::from(f),
            Literal::Bool(b) => Value::from(b),
        }
    }
}

/// Not public API: checks the parameter list at compile time (called in a `const` by the macro).
#[doc(hidden)]
pub const fn check_params(params: &[ParamSpec]) {
    let mut inputs = 0;
    let mut arguments = 0;
    let mut i = 0;
    while i < params.len() {
        match params[i].fields.kind {
            ParamKind::Input => inputs += 1,
            ParamKind::Argument => arguments += 1,
            ParamKind::Injected => {}
        }
        i += 1;
    }
    if inputs > 1 {
        panic!("a `#[tool]` takes at most one `Input<T>` parameter");
    }
    if inputs == 1 && arguments > 0 {
        panic!(
            "a `#[tool]` with an `Input<T>` parameter takes its whole input from `T`: move the other arguments into `T`"
        );
    }
}

/// Not public API: an argument must have a name (checked in a `const` at the parameter).
#[doc(hidden)]
pub const fn check_named(kind: ParamKind, named: bool) {
    if matches!(kind, ParamKind::Argument) && !named {
        panic!(
            "a `#[tool]` argument needs a plain name such as `query: String`, or `#[arg(name = \"...\")]`"
        );
    }
}

/// Not public API: serializes an `#[arg(default = ...)]` value.
#[doc(hidden)]
pub fn default_value<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + JsonSchema + Send + 'static> Param for T {
    const KIND: ParamKind = ParamKind::Argument;

    /// Inlined into the tool's call, so that reading an argument is a lookup and its conversion.
    #[inline]
    fn extract(parts: &mut CallParts<'_>, spec: &'static ParamSpec) -> Result<Self, ToolError> {
        let value = parts.arguments().get(spec.name()).unwrap_or(&Value::Null);
        T::deserialize(value).map_err(|e| invalid_argument(spec, &e))
    }

    fn schema(generator: &mut SchemaGenerator) -> Option<ArgSchema> {
        let optional = T::deserialize(Value::Null).is_ok();
        Some(ArgSchema {
            schema: generator.subschema_for::<T>(),
            optional,
        })
    }
}

/// The error of an argument that does not convert to its parameter's type: off the inlined path.
#[cold]
fn invalid_argument(spec: &ParamSpec, error: &serde_json::Error) -> ToolError {
    ToolError::with_kind(
        ErrorKind::InvalidArguments,
        format!("argument `{}`: {error}", spec.name()),
    )
}

/// The whole input of a tool as one struct: `async fn create(input: Input<NewOrder>)`.
///
/// The input schema is `T`'s schema (its root must be an object); the tool takes no other arguments.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
///
/// /// A new customer.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct NewCustomer {
///     /// Full name.
///     name: String,
///     /// Contact address.
///     email: String,
/// }
///
/// /// Create a customer.
/// #[tool(ability = "customers.manage")]
/// async fn create_customer(Input(customer): Input<NewCustomer>) -> String {
///     format!("created {} <{}>", customer.name, customer.email)
/// }
///
/// let registry = Registry::builder().build().unwrap();
/// let tool = registry.get("create_customer").unwrap();
/// let schema = tool.input_schema();
/// assert_eq!(schema["required"], serde_json::json!(["name", "email"]));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Input<T>(pub T);

impl<T: DeserializeOwned + JsonSchema + Send + 'static> Param for Input<T> {
    const KIND: ParamKind = ParamKind::Input;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        let value = Value::Object(parts.take_arguments());
        T::deserialize(value).map(Input).map_err(|e| {
            ToolError::with_kind(ErrorKind::InvalidArguments, format!("arguments: {e}"))
        })
    }

    fn schema(generator: &mut SchemaGenerator) -> Option<ArgSchema> {
        Some(ArgSchema {
            schema: generator.root_schema_for::<T>(),
            optional: false,
        })
    }
}

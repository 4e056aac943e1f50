//! How a tool's return value becomes a [`ToolResult`] and an output schema.
//!
//! Two traits cover every return type:
//! - [`IntoOutput`]: types with their own encoding: `()`, `String`, [`Content`], `Vec<Content>`,
//!   [`ToolResult`], `serde_json::Value`. Implement it for your own result types.
//! - [`Structured`]: every `Serialize + JsonSchema` value. It becomes structured content, its JSON text
//!   for the model, and the tool's output schema.
//!
//! `Result<T, E>` of either, with `E: Into<ToolError>`, turns `Err` into a tool error. The `#[tool]`
//! macro picks the encoding from the written return type through [`dispatch`], at compile time.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::ToolError;

use super::compound::{Holding, holding};
use super::display::{self, CHART_KEY, TABLE_KEY};
use super::{Chart, Content, DisplayError, StructuredValue, Table, ToolResult};

/// A return type with its own encoding into a [`ToolResult`].
///
/// ```
/// use toolgate::{ToolError, ToolResult};
/// use toolgate::output::IntoOutput;
///
/// struct Weather { celsius: f64 }
///
/// impl IntoOutput for Weather {
///     fn into_output(self) -> Result<ToolResult, ToolError> {
///         Ok(ToolResult::text(format!("{:.1} °C", self.celsius)))
///     }
/// }
/// assert_eq!(Weather { celsius: 21.04 }.into_output().unwrap().text_for_model(), "21.0 °C");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a dynamic tool",
    note = "return `serde_json::Value`, `String`, `Content`, `Vec<Content>`, `ToolResult`, or implement `IntoOutput`"
)]
pub trait IntoOutput: Send + 'static {
    /// Encodes the value.
    fn into_output(self) -> Result<ToolResult, ToolError>;

    /// The JSON Schema of the structured content this type produces, if it produces any.
    fn output_schema(generator: &mut SchemaGenerator) -> Option<Schema> {
        let _ = generator;
        None
    }
}

impl IntoOutput for () {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::success(Vec::new()))
    }
}

impl IntoOutput for String {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(self))
    }
}

impl IntoOutput for &'static str {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::text(self))
    }
}

impl IntoOutput for Content {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::success(vec![self]))
    }
}

impl IntoOutput for Vec<Content> {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::success(self))
    }
}

impl IntoOutput for ToolResult {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        Ok(self)
    }
}

impl IntoOutput for Value {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        structured(self)
    }
}

/// The tool error for a value serde_json cannot write.
fn unencodable(error: serde_json::Error) -> ToolError {
    ToolError::with_kind(
        crate::error::ErrorKind::Internal,
        format!("could not encode the result: {error}"),
    )
}

/// A structured value as a result. A `chart` or `table` beside its data is checked, and the model reads
/// them as tables of text ([`display`]). Inline, so that a value that is no object costs nothing more.
#[inline]
pub(crate) fn structured(value: Value) -> Result<ToolResult, ToolError> {
    if value.is_object() {
        structured_object(value)
    } else {
        Ok(ToolResult::structured(value))
    }
}

fn structured_object(value: Value) -> Result<ToolResult, ToolError> {
    match display::describe(&value).map_err(refused)? {
        None => Ok(ToolResult::structured(value)),
        Some(text) => Ok(shown(text, value)),
    }
}

/// A structured value the model reads as `text`.
fn shown(text: String, value: Value) -> ToolResult {
    ToolResult {
        content: vec![Content::text(text)],
        structured: Some(value.into()),
        ..ToolResult::default()
    }
}

/// The tool error for a chart or table that cannot be drawn.
fn refused(problem: DisplayError) -> ToolError {
    ToolError::new(problem.to_string())
}

impl<T: IntoOutput, E: Into<ToolError> + Send + 'static> IntoOutput for Result<T, E> {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        self.map_err(Into::into).and_then(IntoOutput::into_output)
    }

    fn output_schema(generator: &mut SchemaGenerator) -> Option<Schema> {
        T::output_schema(generator)
    }
}

/// A chart returned on its own is the result's `chart`.
impl IntoOutput for Chart {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        self.check().map_err(refused)?;
        let text = display::alone(&self, display::chart_text);
        Ok(shown(text, json!({ CHART_KEY: self })))
    }

    fn output_schema(generator: &mut SchemaGenerator) -> Option<Schema> {
        Some(beside(CHART_KEY, generator.subschema_for::<Chart>()))
    }
}

/// A table returned on its own is the result's `table`.
impl IntoOutput for Table {
    fn into_output(self) -> Result<ToolResult, ToolError> {
        self.check().map_err(refused)?;
        let text = display::alone(&self, display::table_text);
        Ok(shown(text, json!({ TABLE_KEY: self })))
    }

    fn output_schema(generator: &mut SchemaGenerator) -> Option<Schema> {
        Some(beside(TABLE_KEY, generator.subschema_for::<Table>()))
    }
}

/// The schema of an object whose only, required property `key` is `schema`.
fn beside(key: &str, schema: Schema) -> Schema {
    json_schema!({ "type": "object", "properties": { key: schema }, "required": [key] })
}

/// A value returned as structured content: any `Serialize + JsonSchema` type.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Forecast {
///     /// Degrees Celsius.
///     high: i32,
///     sky: String,
/// }
///
/// /// Tomorrow's forecast.
/// #[tool(public, read_only)]
/// async fn forecast() -> Forecast {
///     Forecast { high: 21, sky: "clear".into() }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let forecast = registry.get("forecast").unwrap();
/// let schema = forecast.output_schema().unwrap();
/// assert_eq!(schema["properties"]["high"]["description"], "Degrees Celsius.");
/// let result = registry.call(&Caller::anonymous(), "forecast", serde_json::json!({})).await.into_result();
/// assert_eq!(result.structured.as_deref(), Some(&serde_json::json!({ "high": 21, "sky": "clear" })));
/// # });
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a `#[tool]`",
    label = "not a tool result",
    note = "return a type that implements `serde::Serialize` and `schemars::JsonSchema`, a `Result<T, E>` of one \
            with `E: Into<ToolError>`, `()`, `String`, `Content`, `Vec<Content>` or a `ToolResult`",
    note = "see the book's chapter \"Results\""
)]
pub trait Structured: Send + 'static {
    /// Serializes the value.
    fn encode(self) -> Result<ToolResult, ToolError>;
    /// The schema of the serialized value.
    fn schema(generator: &mut SchemaGenerator) -> Schema;
}

#[diagnostic::do_not_recommend]
impl<T: Serialize + JsonSchema + Send + 'static> Structured for T {
    /// A list, or a struct with nothing to draw, is written straight to its JSON text, which is what
    /// MCP sends; anything else becomes a [`Value`].
    fn encode(self) -> Result<ToolResult, ToolError> {
        match holding(&self) {
            Holding::Text => Ok(ToolResult::structured(
                StructuredValue::written(&self).map_err(unencodable)?,
            )),
            Holding::Value => structured(serde_json::to_value(&self).map_err(unencodable)?),
        }
    }

    fn schema(generator: &mut SchemaGenerator) -> Schema {
        generator.root_schema_for::<T>()
    }
}

/// How a return type `T` is encoded, chosen at compile time.
#[doc(hidden)]
#[derive(Debug)]
pub struct OutputSpec<T> {
    /// Turns the value into a result or a tool error.
    pub encode: fn(T) -> Result<ToolResult, ToolError>,
    /// The output schema, if the value is structured.
    pub schema: fn(&mut SchemaGenerator) -> Option<Schema>,
}

/// Not public API: autoref dispatch from a return type to its [`OutputSpec`].
///
/// The macro calls `(&&&&&Probe::<T>::NEW).spec()`; method resolution takes the first level that applies:
/// an [`IntoOutput`] (so `String` stays text), then a `Result` of either whose error is boxed
/// (`Box<dyn Error + Send + Sync>`, `anyhow::Error`), a `Result` of a [`Structured`], and last any
/// [`Structured`] value, whose bound produces the error message for a type that is none of these.
#[doc(hidden)]
pub mod dispatch {
    use std::marker::PhantomData;

    use super::{IntoOutput, OutputSpec, Structured};
    use crate::error::ToolError;

    /// A zero-sized stand-in for a value of type `T`.
    #[derive(Debug)]
    pub struct Probe<T>(PhantomData<fn() -> T>);

    impl<T> Probe<T> {
        /// The probe.
        pub const NEW: Self = Probe(PhantomData);
    }

    /// Level 1: an [`IntoOutput`], including `Result`s of one.
    pub trait ViaOutput<T> {
        /// The spec.
        fn spec(&self) -> OutputSpec<T>;
    }

    impl<T: IntoOutput> ViaOutput<T> for &&&&Probe<T> {
        fn spec(&self) -> OutputSpec<T> {
            OutputSpec {
                encode: T::into_output,
                schema: T::output_schema,
            }
        }
    }

    /// An error type that converts into a [`ToolError`] although it cannot be `Into<ToolError>` (the
    /// standard library or its crate might one day make it an `Error`): a boxed error, and
    /// `anyhow::Error` with the `anyhow` feature. The error is kept, with its chain, as the source.
    pub trait BoxedError {
        /// Converts the error.
        fn into_tool_error(self) -> ToolError;
    }

    impl BoxedError for Box<dyn std::error::Error + Send + Sync> {
        fn into_tool_error(self) -> ToolError {
            ToolError::from_boxed(self)
        }
    }

    #[cfg(feature = "anyhow")]
    impl BoxedError for anyhow::Error {
        fn into_tool_error(self) -> ToolError {
            ToolError::from_boxed(self.into())
        }
    }

    /// Level 2: `Result<T: IntoOutput, E: BoxedError>`.
    pub trait ViaOutputBoxed<T, E> {
        /// The spec.
        fn spec(&self) -> OutputSpec<Result<T, E>>;
    }

    impl<T: IntoOutput, E: BoxedError> ViaOutputBoxed<T, E> for &&&Probe<Result<T, E>> {
        fn spec(&self) -> OutputSpec<Result<T, E>> {
            OutputSpec {
                encode: |r| r.map_err(E::into_tool_error).and_then(T::into_output),
                schema: T::output_schema,
            }
        }
    }

    /// Level 3: `Result<T: Structured, E: BoxedError>`.
    pub trait ViaStructuredBoxed<T, E> {
        /// The spec.
        fn spec(&self) -> OutputSpec<Result<T, E>>;
    }

    impl<T: Structured, E: BoxedError> ViaStructuredBoxed<T, E> for &&Probe<Result<T, E>> {
        fn spec(&self) -> OutputSpec<Result<T, E>> {
            OutputSpec {
                encode: |r| r.map_err(E::into_tool_error).and_then(T::encode),
                schema: |g| Some(T::schema(g)),
            }
        }
    }

    /// Level 4: `Result<T: Structured, E>`; the bound on `E` sits on the method so that a `Result` with a
    /// foreign error type is an error rather than a silently serialized `{"Err": ...}`.
    pub trait ViaResultStructured<T, E> {
        /// The spec.
        fn spec(&self) -> OutputSpec<Result<T, E>>
        where
            E: ErrorSource;
    }

    impl<T: Structured, E> ViaResultStructured<T, E> for &Probe<Result<T, E>> {
        fn spec(&self) -> OutputSpec<Result<T, E>>
        where
            E: ErrorSource,
        {
            OutputSpec {
                encode: |r| r.map_err(E::into_tool_error).and_then(T::encode),
                schema: |g| Some(T::schema(g)),
            }
        }
    }

    /// The error type of a tool's `Result`.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be the error type of a `#[tool]`",
        label = "this error type does not convert into `ToolError`",
        note = "return `ToolError` (`ToolError::new(\"what went wrong\")`), any type implementing `std::error::Error`, `Box<dyn Error + Send + Sync>`, or `anyhow::Error` (feature `anyhow`)"
    )]
    pub trait ErrorSource {
        /// Converts the error.
        fn into_tool_error(self) -> ToolError;
    }

    #[diagnostic::do_not_recommend]
    impl<E: Into<ToolError>> ErrorSource for E {
        fn into_tool_error(self) -> ToolError {
            self.into()
        }
    }

    /// Level 5: any [`Structured`] value; the bound sits on the method so its message reaches the user.
    pub trait ViaStructured<T> {
        /// The spec.
        fn spec(&self) -> OutputSpec<T>
        where
            T: Structured;
    }

    impl<T> ViaStructured<T> for Probe<T> {
        fn spec(&self) -> OutputSpec<T>
        where
            T: Structured,
        {
            OutputSpec {
                encode: T::encode,
                schema: |g| Some(T::schema(g)),
            }
        }
    }
}

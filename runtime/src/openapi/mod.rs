//! A REST API described by an OpenAPI 3.0 or 3.1 document, as tools (the `openapi` feature): each
//! operation becomes a [`DynamicTool`] named `label_operationId` (or after its method and path), with
//! one input schema for its path, query and header parameters and its JSON body (`body`), the schema of
//! its success's answer as its output schema, and what the document says it does as its description.
//! They go through the one pipeline like every tool: permissions, validation of the arguments before
//! any request, ceilings, rate limits, hooks, audit. `GET` and `HEAD` only read; every other operation
//! is a write, previewed for a person to approve with its method, address and body.
//!
//! ```
//! use toolgate::openapi::OpenApi;
//! use toolgate::Registry;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let document = r#"{"openapi": "3.1.0", "paths": {"/orders": {"get": {"operationId": "list_orders"}}}}"#;
//! let api = OpenApi::from_json("orders", document, "https://orders.example.com")?
//!     .ability("orders.use")
//!     .callers_credential();
//! let converted = api.tools()?;
//! for skipped in &converted.skipped {
//!     eprintln!("{}: {}", skipped.operation, skipped.why);
//! }
//! let registry = Registry::builder().tools(converted.tools).build()?;
//! assert!(registry.get("orders_list_orders").is_some_and(|tool| tool.is_read_only()));
//! # Ok(()) }
//! ```

mod call;
mod operation;
mod schema;

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ErrorKind, ToolError};
use crate::output::Preview;
use crate::tool::DynamicTool;

use call::Api;
use operation::{BODY, Operation};

/// The largest document read.
///
/// ```
/// use toolgate::openapi::{MAX_DOCUMENT, OpenApi};
///
/// let huge = format!("{{\"openapi\": \"3.1.0\", \"x\": \"{}\"}}", "a".repeat(MAX_DOCUMENT));
/// assert!(OpenApi::from_json("big", &huge, "http://127.0.0.1:8000").is_err());
/// ```
pub const MAX_DOCUMENT: usize = 16 * 1024 * 1024;

/// How long a call waits for the API unless told otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// An API described by an OpenAPI document, to be served as tools.
///
/// ```
/// use serde_json::json;
/// use toolgate::openapi::OpenApi;
///
/// let document = json!({ "openapi": "3.1.0", "paths": { "/pets/{id}": {
///     "get": { "operationId": "get_pet", "summary": "One pet",
///              "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "integer" } }] },
///     "delete": { "summary": "Remove a pet" },
/// }}});
/// let pets = OpenApi::new("pets", document, "http://127.0.0.1:8000").ability("pets.use");
/// let converted = pets.tools().unwrap();
/// let names: Vec<&str> = converted.tools.iter().map(|tool| tool.name()).collect();
/// assert_eq!(names, ["pets_get_pet", "pets_delete_pets_id"]);
/// ```
#[derive(Debug, Clone)]
pub struct OpenApi {
    label: String,
    document: Value,
    base_url: String,
    abilities: Vec<String>,
    public: bool,
    credential: Credential,
    timeout: Duration,
    tags: Vec<String>,
    methods: Vec<String>,
    paths: Vec<String>,
    renamed: std::collections::BTreeMap<String, String>,
    idempotent: Vec<String>,
}

/// What a call sends the API to say who calls.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Credential {
    None,
    /// The calling person's own credential (their token to this server), so that the API checks each
    /// caller's rights itself.
    Callers,
    /// A token of the service's own, read from this environment variable at each call.
    BearerEnv(String),
}

/// Why an API cannot be served.
///
/// ```
/// use toolgate::openapi::OpenApi;
///
/// let error = OpenApi::from_json("old", r#"{"swagger": "2.0"}"#, "http://127.0.0.1:8000")
///     .and_then(|api| api.public().tools())
///     .unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "the API `old` cannot be served: it is a Swagger 2.0 document; convert it to OpenAPI 3 first"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenApiError(String);

impl std::fmt::Display for OpenApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpenApiError {}

/// The tools an API became, and the operations that could not become one, with why.
///
/// ```
/// use serde_json::json;
/// use toolgate::openapi::OpenApi;
///
/// let document = json!({ "openapi": "3.0.3", "paths": { "/upload": { "post": {
///     "operationId": "upload",
///     "requestBody": { "content": { "multipart/form-data": { "schema": { "type": "object" } } } },
/// }}}});
/// let converted = OpenApi::new("files", document, "http://127.0.0.1:8000").public().tools().unwrap();
/// assert!(converted.tools.is_empty());
/// assert_eq!(converted.skipped[0].operation, "POST /upload");
/// assert_eq!(converted.skipped[0].why, "its request body is not JSON");
/// ```
#[derive(Debug, Clone)]
pub struct Converted {
    /// One per operation served.
    pub tools: Vec<DynamicTool>,
    /// The operations not served.
    pub skipped: Vec<Skipped>,
}

/// An operation that is not served, and why.
///
/// ```
/// use serde_json::json;
/// use toolgate::openapi::OpenApi;
///
/// let document = json!({ "openapi": "3.1.0", "paths": { "/session": { "get": {
///     "operationId": "whoami",
///     "parameters": [{ "name": "sid", "in": "cookie", "required": true }],
/// }}}});
/// let skipped = OpenApi::new("app", document, "http://127.0.0.1:8000").public().tools().unwrap().skipped;
/// assert_eq!(skipped[0].why, "its parameter `sid` is in cookie, which toolgate does not send");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Its method and path, as `GET /orders/{id}`.
    pub operation: String,
    /// Why, as the operator reads it.
    pub why: String,
}

impl OpenApi {
    /// The API labelled `label` whose document is `document`, reached at `base_url`.
    pub fn new(label: impl Into<String>, document: Value, base_url: impl Into<String>) -> Self {
        OpenApi {
            label: label.into(),
            document,
            base_url: base_url.into(),
            abilities: Vec::new(),
            public: false,
            credential: Credential::None,
            timeout: DEFAULT_TIMEOUT,
            tags: Vec::new(),
            methods: Vec::new(),
            paths: Vec::new(),
            renamed: std::collections::BTreeMap::new(),
            idempotent: Vec::new(),
        }
    }

    /// The API whose document is the JSON `text`.
    ///
    /// # Errors
    /// A document larger than [`MAX_DOCUMENT`] or that is not JSON.
    pub fn from_json(
        label: impl Into<String>,
        text: &str,
        base_url: impl Into<String>,
    ) -> Result<Self, OpenApiError> {
        let label = label.into();
        if text.len() > MAX_DOCUMENT {
            return Err(OpenApiError(format!(
                "the document of `{label}` is {} bytes, more than {MAX_DOCUMENT}",
                text.len()
            )));
        }
        let document = serde_json::from_str(text).map_err(|error| {
            OpenApiError(format!("the document of `{label}` is not JSON: {error}"))
        })?;
        Ok(OpenApi::new(label, document, base_url))
    }

    /// Callers need `ability` for every operation (call again to require several).
    #[must_use]
    pub fn ability(mut self, ability: impl Into<String>) -> Self {
        self.abilities.push(ability.into());
        self
    }

    /// Anyone may call its operations.
    #[must_use]
    pub fn public(mut self) -> Self {
        self.public = true;
        self
    }

    /// Each call carries the calling person's own credential as a bearer token, and the API checks
    /// their rights itself: its tools are for callers with an identity, and a call that carries no
    /// credential is refused before anything is sent.
    #[must_use]
    pub fn callers_credential(mut self) -> Self {
        self.credential = Credential::Callers;
        self
    }

    /// Each call carries the service's token, read from the environment variable `name`.
    #[must_use]
    pub fn bearer_env(mut self, name: impl Into<String>) -> Self {
        self.credential = Credential::BearerEnv(name.into());
        self
    }

    /// How long a call waits for the API's whole answer (30 seconds unless told).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Serves only the operations with one of these tags.
    #[must_use]
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Serves only the operations of these methods (`GET`, `POST`, ...).
    #[must_use]
    pub fn methods<I, S>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.methods = methods
            .into_iter()
            .map(|m| m.into().to_uppercase())
            .collect();
        self
    }

    /// Serves only the operations whose path starts with one of these (`/orders`).
    #[must_use]
    pub fn paths<I, S>(mut self, prefixes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.paths = prefixes.into_iter().map(Into::into).collect();
        self
    }

    /// Serves the operation `operation` (its `operationId`) as the tool `name`.
    #[must_use]
    pub fn rename(mut self, operation: impl Into<String>, name: impl Into<String>) -> Self {
        self.renamed.insert(operation.into(), name.into());
        self
    }

    /// Marks the write `operation` (its `operationId`) idempotent: running it again with the same
    /// arguments changes nothing more (a `PUT`, say), as clients are told.
    #[must_use]
    pub fn idempotent(mut self, operation: impl Into<String>) -> Self {
        self.idempotent.push(operation.into());
        self
    }

    /// Why `operation` is not served, when the operator's filters leave it out.
    fn filtered(&self, operation: &Operation) -> Option<&'static str> {
        let method = operation.method.as_str();
        if !self.methods.is_empty() && !self.methods.iter().any(|m| m == method) {
            return Some("its method is not served");
        }
        if !self.paths.is_empty() && !self.paths.iter().any(|p| operation.path.starts_with(p)) {
            return Some("its path is not served");
        }
        if !self.tags.is_empty() && !operation.tags.iter().any(|t| self.tags.contains(t)) {
            return Some("none of its tags is served");
        }
        None
    }

    /// Its operations as tools, and those that could not be one.
    ///
    /// # Errors
    /// A document that is not OpenAPI 3.0 or 3.1, a base URL that is not `http` or `https`, or an API
    /// whose callers are not said (`ability`, `public` or `callers_credential`).
    pub fn tools(&self) -> Result<Converted, OpenApiError> {
        let label = &self.label;
        let refused =
            |why: String| OpenApiError(format!("the API `{label}` cannot be served: {why}"));
        if self.abilities.is_empty() && !self.public && self.credential != Credential::Callers {
            return Err(refused(
                "say who may call it: `ability`, `public`, or `callers_credential`".to_owned(),
            ));
        }
        let base = reqwest::Url::parse(&self.base_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| refused(format!("`{}` is no http or https address", self.base_url)))?;
        let (operations, mut skipped) =
            operation::operations(label, &self.document).map_err(refused)?;
        let origin = base.origin();
        let http = reqwest::Client::builder()
            .timeout(self.timeout)
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                match attempt.previous().len() < 5 && attempt.url().origin() == origin {
                    true => attempt.follow(),
                    false => attempt.stop(),
                }
            }))
            .build()
            .map_err(|error| refused(format!("no HTTP client: {error}")))?;
        let api = Arc::new(Api {
            label: label.clone(),
            base_url: self.base_url.clone(),
            http,
            timeout: self.timeout,
        });
        let mut tools = Vec::new();
        for mut operation in operations {
            if let Some(why) = self.filtered(&operation) {
                skipped.push(Skipped {
                    operation: format!("{} {}", operation.method, operation.path),
                    why: why.to_owned(),
                });
                continue;
            }
            let id = operation.id.as_deref().unwrap_or_default();
            if let Some(name) = self.renamed.get(id) {
                operation.name.clone_from(name);
            }
            tools.push(self.tool(&api, operation));
        }
        Ok(Converted { tools, skipped })
    }

    /// The tool of `operation`.
    fn tool(&self, api: &Arc<Api>, operation: Operation) -> DynamicTool {
        let description = match (&*operation.summary, &*operation.description) {
            ("", "") => format!(
                "{} {} of the API `{}`.",
                operation.method, operation.path, self.label
            ),
            (summary, "") => summary.to_owned(),
            ("", description) => description.to_owned(),
            (summary, description) => format!("{summary}\n\n{description}"),
        };
        let operation = Arc::new(operation);
        let credential = self.credential.clone();
        let (called, asked) = (Arc::clone(&operation), Arc::clone(api));
        let mut tool = DynamicTool::new(
            operation.name.clone(),
            description,
            operation.input_schema.clone(),
            move |arguments, parts| {
                let (operation, api, credential) =
                    (Arc::clone(&called), Arc::clone(&asked), credential.clone());
                async move {
                    let token = token(&api.label, &credential, parts.caller.credential())?;
                    call::call(&api, &operation, &arguments, token.as_deref()).await
                }
            },
        );
        if !operation.summary.is_empty() {
            tool = tool.title(operation.summary.clone());
        }
        if let Some(schema) = &operation.output_schema {
            tool = tool.output_schema(schema.clone());
        }
        for ability in &self.abilities {
            tool = tool.ability(ability.clone());
        }
        if self.credential == Credential::Callers {
            tool = tool.enforced_downstream();
        } else if self.public {
            tool = tool.public();
        }
        if operation.reads() {
            return tool.read_only();
        }
        if (operation.id.as_ref()).is_some_and(|id| self.idempotent.contains(id)) {
            tool = tool.idempotent();
        }
        let api = Arc::clone(api);
        tool.preview(move |arguments, _parts| {
            let (operation, api) = (Arc::clone(&operation), Arc::clone(&api));
            async move { preview(&api, &operation, &arguments) }
        })
    }
}

/// What a person reads before a write runs: what the document says it does, its method, its address,
/// and the body it sends.
fn preview(api: &Api, operation: &Operation, arguments: &Value) -> Result<Preview, ToolError> {
    let address = call::address(api, operation, arguments)?;
    let said = match operation.summary.as_str() {
        "" => String::new(),
        summary => format!("{summary}: "),
    };
    let mut text = format!("{said}{} {address}", operation.method);
    let body = arguments.get(BODY).filter(|body| !body.is_null());
    if let Some(body) = body {
        text.push_str(&format!(" with {body}"));
    }
    let data = json!({ "method": operation.method.as_str(), "url": address, "body": body });
    Ok(Preview::new(text).with_data(data))
}

/// The token a call sends, by `credential`: the caller's own (`callers`), the service's, or none.
fn token(
    label: &str,
    credential: &Credential,
    callers: Option<&str>,
) -> Result<Option<String>, ToolError> {
    match credential {
        Credential::None => Ok(None),
        Credential::Callers => callers.map(|token| Some(token.to_owned())).ok_or_else(|| {
            ToolError::with_kind(
                ErrorKind::Denied,
                format!(
                    "The API `{label}` checks each caller's rights itself, and this call carries no \
                     credential of yours; nothing was sent."
                ),
            )
        }),
        Credential::BearerEnv(name) => std::env::var(name).map(Some).map_err(|_| {
            ToolError::with_kind(
                ErrorKind::Unavailable,
                format!("The API `{label}` cannot be called now: its token is not set."),
            )
        }),
    }
}

/// The REST APIs of a configuration file, `[apis.<label>]`, each read and converted when the file is:
/// a document that cannot be served fails the file's reading, with why.
///
/// ```
/// use toolgate::registry::Config;
///
/// let dir = std::env::temp_dir().join(format!("toolgate-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let document = dir.join("pets.json");
/// std::fs::write(&document, r#"{"openapi": "3.1.0", "paths": {"/pets": {"get": {"operationId": "list"}}}}"#).unwrap();
/// let config = Config::from_toml(&format!(
///     "[apis.pets]\ndocument = {:?}\nbase_url = \"http://127.0.0.1:8000\"\nability = \"pets.read\"\n",
///     document.display().to_string()
/// ))?;
/// assert_eq!(config.apis.tool_names(), ["pets_list"]);
/// let refused = Config::from_toml("[apis.pets]\ndocument = \"/nowhere.json\"\nbase_url = \"http://a\"\npublic = true\n");
/// assert!(refused.unwrap_err().to_string().contains("the document of the API `pets` cannot be read"));
/// # Ok::<(), toolgate::registry::ConfigError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ConfiguredApis(std::collections::BTreeMap<String, ConfiguredApi>);

/// One API of a configuration file: what it became, and the digest of what it was made from.
#[derive(Debug, Clone)]
struct ConfiguredApi {
    digest: String,
    converted: Converted,
}

impl PartialEq for ConfiguredApis {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && (self.0.iter().zip(&other.0)).all(|((a, x), (b, y))| a == b && x.digest == y.digest)
    }
}

impl ConfiguredApis {
    /// The names of the tools they became.
    pub fn tool_names(&self) -> Vec<&str> {
        (self.0.values())
            .flat_map(|api| api.converted.tools.iter().map(DynamicTool::name))
            .collect()
    }

    /// Their tools, each API's skipped operations told to the log.
    pub(crate) fn into_tools(self) -> impl Iterator<Item = DynamicTool> {
        self.0.into_iter().flat_map(|(label, api)| {
            for skipped in &api.converted.skipped {
                tracing::warn!(target: "toolgate::openapi", api = label, operation = skipped.operation, "not served: {}", skipped.why);
            }
            api.converted.tools
        })
    }
}

/// An API as the configuration file writes it.
#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct ApiConfig {
    /// The document's file (JSON).
    document: std::path::PathBuf,
    base_url: String,
    #[serde(default)]
    ability: Option<String>,
    #[serde(default)]
    public: bool,
    #[serde(default)]
    callers_credential: bool,
    #[serde(default)]
    bearer_env: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    methods: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    /// Tool names by `operationId`.
    #[serde(default)]
    rename: std::collections::BTreeMap<String, String>,
    /// The writes, by `operationId`, that are idempotent.
    #[serde(default)]
    idempotent: Vec<String>,
    #[serde(default)]
    timeout_secs: Option<f64>,
}

impl<'de> Deserialize<'de> for ConfiguredApis {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = std::collections::BTreeMap::<String, ApiConfig>::deserialize(deserializer)?;
        let mut apis = std::collections::BTreeMap::new();
        for (label, entry) in entries {
            let api = configured(&label, &entry).map_err(serde::de::Error::custom)?;
            apis.insert(label, api);
        }
        Ok(ConfiguredApis(apis))
    }
}

/// The API `label` of the configuration file's `entry`, read and converted.
fn configured(label: &str, entry: &ApiConfig) -> Result<ConfiguredApi, String> {
    crate::text::Ident::check(label).map_err(|error| format!("`[apis.{label}]`: {error}"))?;
    let unreadable =
        |why: String| format!("the document of the API `{label}` cannot be read: {why}");
    let size = std::fs::metadata(&entry.document)
        .map_err(|e| unreadable(e.to_string()))?
        .len();
    if size > MAX_DOCUMENT as u64 {
        return Err(unreadable(format!(
            "it is {size} bytes, more than {MAX_DOCUMENT}"
        )));
    }
    let text = std::fs::read_to_string(&entry.document).map_err(|e| unreadable(e.to_string()))?;
    let mut api = OpenApi::from_json(label, &text, &entry.base_url).map_err(|e| e.to_string())?;
    api.abilities.extend(entry.ability.clone());
    api.public = entry.public;
    if entry.callers_credential {
        api = api.callers_credential();
    }
    if let Some(name) = &entry.bearer_env {
        api = api.bearer_env(name);
    }
    api = (api.tags(entry.tags.iter().cloned()))
        .methods(entry.methods.iter().cloned())
        .paths(entry.paths.iter().cloned());
    for (operation, name) in &entry.rename {
        api = api.rename(operation, name);
    }
    for operation in &entry.idempotent {
        api = api.idempotent(operation);
    }
    if let Some(secs) = entry.timeout_secs {
        let timeout = crate::clock::positive_seconds(secs).ok_or_else(|| {
            format!(
                "the API `{label}` has a `timeout_secs` of {secs}, not a positive number of seconds"
            )
        })?;
        api = api.timeout(timeout);
    }
    let converted = api.tools().map_err(|e| e.to_string())?;
    let described = serde_json::to_string(entry).unwrap_or_default();
    use sha2::Digest as _;
    let digest = sha2::Sha256::new()
        .chain_update(described.as_bytes())
        .chain_update(text.as_bytes())
        .finalize();
    Ok(ConfiguredApi {
        digest: crate::random::hex(&digest),
        converted,
    })
}

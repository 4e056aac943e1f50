//! One call of an operation: its request made from the tool's arguments, and the API's answer made a
//! result the model can act on. An error carries the API's own message (RFC 9457 problem details,
//! FastAPI's `detail`, a `message`) with addresses and the credential taken out; a redirect to another
//! origin is not followed; an answer is read to [`MAX_ANSWER`] bytes at most.

use std::time::Duration;

use serde_json::Value;

use crate::error::{ErrorKind, ToolError};
use crate::output::ToolResult;

use super::operation::{BODY, Location, Operation};

/// The most bytes of an answer read.
pub(super) const MAX_ANSWER: usize = 4 * 1024 * 1024;

/// The longest message of the API's passed on.
const MAX_MESSAGE: usize = 500;

/// What a call is made with: the API's address, the HTTP client, and the credential to send.
pub(super) struct Api {
    pub(super) label: String,
    pub(super) base_url: String,
    pub(super) http: reqwest::Client,
    pub(super) timeout: Duration,
}

/// The request `operation` makes with `arguments`: its method, its address, and its URL as a person
/// reads it in an approval.
pub(super) fn address(
    api: &Api,
    operation: &Operation,
    arguments: &Value,
) -> Result<String, ToolError> {
    let mut path = operation.path.clone();
    for parameter in operation
        .parameters
        .iter()
        .filter(|p| p.location == Location::Path)
    {
        let value = plain(&arguments[&parameter.key]).ok_or_else(|| {
            ToolError::with_kind(
                ErrorKind::InvalidArguments,
                format!("`{}` is required", parameter.key),
            )
        })?;
        if value.is_empty() || value == "." || value == ".." {
            return Err(ToolError::with_kind(
                ErrorKind::InvalidArguments,
                format!(
                    "`{}` cannot be `{value}`: it would name another path",
                    parameter.key
                ),
            ));
        }
        path = path.replace(&format!("{{{}}}", parameter.name), &segment(&value));
    }
    let base = api.base_url.trim_end_matches('/');
    let mut url = reqwest::Url::parse(&format!("{base}{path}")).map_err(|_| {
        ToolError::with_kind(
            ErrorKind::InvalidArguments,
            "the arguments make no address".to_owned(),
        )
    })?;
    for parameter in operation
        .parameters
        .iter()
        .filter(|p| p.location == Location::Query)
    {
        let values = match &arguments[&parameter.key] {
            Value::Array(items) => items.iter().filter_map(plain).collect(),
            value => plain(value).into_iter().collect::<Vec<_>>(),
        };
        for value in values {
            url.query_pairs_mut().append_pair(&parameter.name, &value);
        }
    }
    Ok(url.into())
}

/// `value` as one segment of a path: every byte but the unreserved ones percent-encoded, so that an
/// argument cannot add a segment (`../admin`) or a query.
fn segment(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A parameter's value as it goes in a URL or header: a string as it is, a number or flag written out,
/// anything else as JSON.
fn plain(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// Makes the call of `operation` with `arguments`, sending `credential` as a bearer token.
pub(super) async fn call(
    api: &Api,
    operation: &Operation,
    arguments: &Value,
    credential: Option<&str>,
) -> Result<ToolResult, ToolError> {
    let url = address(api, operation, arguments)?;
    let mut request = api.http.request(operation.method.clone(), &url);
    for parameter in operation
        .parameters
        .iter()
        .filter(|p| p.location == Location::Header)
    {
        if let Some(value) = plain(&arguments[&parameter.key]) {
            let value = http::HeaderValue::try_from(value).map_err(|_| {
                ToolError::with_kind(
                    ErrorKind::InvalidArguments,
                    format!("`{}` cannot be sent as a header", parameter.key),
                )
            })?;
            request = request.header(parameter.name.as_str(), value);
        }
    }
    if let Some(token) = credential {
        request = request.bearer_auth(token);
    }
    if operation.has_body
        && let Some(body) = arguments.get(BODY).filter(|body| !body.is_null())
    {
        request = request.json(body);
    }
    let request = request.header(http::header::ACCEPT, "application/json, */*;q=0.5");
    let label = &api.label;
    // The client's timeout covers the whole call, its answer's body too.
    let failed = |error: reqwest::Error| match error.is_timeout() {
        true => unavailable(label, format!("did not answer within {:?}", api.timeout)),
        false => unavailable(label, "cannot be reached".to_owned()),
    };
    let response = request.send().await.map_err(failed)?;
    let status = response.status();
    let json = (response.headers().get(http::header::CONTENT_TYPE))
        .and_then(|kind| kind.to_str().ok())
        .map(|kind| {
            kind.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        });
    let body = bounded(response).await.map_err(|why| match why {
        Answer::Broken(error) if error.is_timeout() => unavailable(
            label,
            format!("did not finish answering within {:?}", api.timeout),
        ),
        Answer::Broken(_) => unavailable(label, "broke off its answer".to_owned()),
        Answer::TooLarge => {
            unavailable(label, format!("answered with more than {MAX_ANSWER} bytes"))
        }
    })?;
    let kind = json.as_deref().unwrap_or("no content type");
    let is_json = kind == "application/json" || kind.ends_with("+json");
    let name = &operation.name;
    if status.is_redirection() {
        return Err(ToolError::new(format!(
            "The API `{label}` answered `{name}` with a redirect to another origin, which is not followed."
        )));
    }
    if !status.is_success() {
        let said = is_json
            .then(|| serde_json::from_slice::<Value>(&body).ok())
            .flatten();
        let message = said
            .as_ref()
            .and_then(message)
            .map(|m| clean(&m, credential));
        let kind = match status.as_u16() {
            401 | 403 => ErrorKind::Denied,
            429 => ErrorKind::LimitReached,
            500.. => ErrorKind::Unavailable,
            _ => ErrorKind::Failed,
        };
        let reason = status.canonical_reason().unwrap_or_default();
        let message = message.map(|m| format!(": {m}")).unwrap_or_default();
        return Err(ToolError::with_kind(
            kind,
            format!(
                "The API `{label}` refused `{name}` ({} {reason}){message}",
                status.as_u16()
            ),
        ));
    }
    if body.is_empty() {
        return Ok(ToolResult::text(format!("Done ({}).", status.as_u16())));
    }
    if !is_json {
        if operation.output_schema.is_some() {
            return Err(ToolError::new(format!(
                "The API `{label}` answered `{name}` with {kind} where its document promised JSON; the \
                 answer is not passed on."
            )));
        }
        let text = String::from_utf8_lossy(&body);
        return Ok(ToolResult::text(clean(&text, credential)));
    }
    let value: Value = serde_json::from_slice(&body).map_err(|_| {
        ToolError::new(format!(
            "The API `{label}` answered `{name}` with JSON that does not parse."
        ))
    })?;
    crate::output::IntoOutput::into_output(value)
}

/// Why an answer's body was not read whole.
enum Answer {
    Broken(reqwest::Error),
    TooLarge,
}

/// The body of `response`, refused past [`MAX_ANSWER`] bytes.
async fn bounded(mut response: reqwest::Response) -> Result<Vec<u8>, Answer> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(Answer::Broken)? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(Answer::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The message an error answer carries: problem details' `title` and `detail` (RFC 9457), FastAPI's
/// `detail` (a text, or the list of what failed validation), or a `message` or `error`.
fn message(said: &Value) -> Option<String> {
    let text = |value: &Value| value.as_str().map(str::to_owned);
    match &said["detail"] {
        Value::String(detail) => Some(match said["title"].as_str() {
            Some(title) => format!("{title}: {detail}"),
            None => detail.clone(),
        }),
        Value::Array(problems) => Some(
            problems
                .iter()
                .filter_map(|p| Some(format!("{} ({})", p["msg"].as_str()?, p["loc"])))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        _ => text(&said["title"])
            .or_else(|| text(&said["message"]))
            .or_else(|| text(&said["error"]))
            .or_else(|| text(&said["error"]["message"])),
    }
}

/// `text` as the model may read it: addresses and the credential taken out, characters that hide
/// themselves shown, cut to [`MAX_MESSAGE`].
fn clean(text: &str, credential: Option<&str>) -> String {
    let mut kept = String::with_capacity(text.len().min(MAX_MESSAGE));
    for word in text.split_inclusive(char::is_whitespace) {
        let bare = word.trim_start_matches(['"', '\'', '(', '<', '>', '=']);
        if bare.starts_with("http://") || bare.starts_with("https://") {
            kept.push_str("[an address]");
            kept.extend(word.chars().filter(|c| c.is_whitespace()));
        } else {
            kept.push_str(word);
        }
    }
    if let Some(secret) = credential.filter(|secret| !secret.is_empty()) {
        kept = kept.replace(secret, "[the credential]");
    }
    crate::text::shown(&kept)
        .chars()
        .take(MAX_MESSAGE)
        .collect()
}

/// The error of a call the API did not answer.
fn unavailable(label: &str, why: String) -> ToolError {
    ToolError::with_kind(
        ErrorKind::Unavailable,
        format!("The API `{label}` {why}; the call may or may not have run."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_argument_stays_in_its_segment() {
        assert_eq!(segment("../admin?x=1"), "..%2Fadmin%3Fx%3D1");
        assert_eq!(segment("a b"), "a%20b");
    }

    #[test]
    fn an_errors_message_is_the_apis_own_without_addresses_or_the_credential() {
        let problem =
            json!({ "type": "about:blank", "title": "Out of stock", "detail": "Item 7 is gone." });
        assert_eq!(message(&problem).unwrap(), "Out of stock: Item 7 is gone.");
        let fastapi = json!({ "detail": [{ "loc": ["body", "quantity"], "msg": "Input should be greater than 0" }] });
        assert_eq!(
            message(&fastapi).unwrap(),
            "Input should be greater than 0 ([\"body\",\"quantity\"])"
        );
        let leaked = "failed at http://10.0.0.7:8080/internal with token s3cr3t";
        assert_eq!(
            clean(leaked, Some("s3cr3t")),
            "failed at [an address] with token [the credential]"
        );
    }
}

//! [`Content`] blocks: text, images, audio and embedded resources, in MCP's wire shape.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// One block of a tool's result. Serializes exactly as MCP's `ContentBlock` (`{"type": "text", ...}`).
///
/// ```
/// use toolgate::Content;
///
/// let png = Content::image(&[0x89, b'P', b'N', b'G'], "image/png");
/// assert_eq!(serde_json::to_value(&png).unwrap()["data"], "iVBORw==");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text for the model.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 of the bytes.
        data: String,
        /// For example `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 of the bytes.
        data: String,
        /// For example `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource embedded in the result.
    Resource {
        /// The resource.
        resource: EmbeddedResource,
    },
}

/// A resource embedded in a result: a URI with text or a base64 blob.
///
/// ```
/// use toolgate::Content;
///
/// let csv = Content::resource_text("file:///reports/q3.csv", "text/csv", "month,revenue\nJul,120\n");
/// let Content::Resource { resource } = &csv else { unreachable!() };
/// assert_eq!((resource.uri.as_str(), resource.mime_type.as_deref()), ("file:///reports/q3.csv", Some("text/csv")));
/// assert_eq!(serde_json::to_value(resource).unwrap()["mimeType"], "text/csv");
///
/// let logo = Content::resource_blob("shop://logo.png", "image/png", [0x89, b'P', b'N', b'G']);
/// let Content::Resource { resource } = &logo else { unreachable!() };
/// assert_eq!(resource.blob.as_deref(), Some("iVBORw=="));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// Where the resource lives, e.g. `file:///report.csv` or `shop://orders/RO-1`.
    pub uri: String,
    /// Its media type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 of its bytes, for a binary resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// An image block from raw bytes.
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An audio block from raw bytes.
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Content::Audio {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Content::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: Some(text.into()),
                blob: None,
            },
        }
    }

    /// An embedded binary resource from raw bytes.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl AsRef<[u8]>,
    ) -> Self {
        Content::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: None,
                blob: Some(STANDARD.encode(bytes)),
            },
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            _ => None,
        }
    }

    /// The decoded bytes and media type of an image or audio block.
    pub fn binary(&self) -> Option<(Vec<u8>, &str)> {
        match self {
            Content::Image { data, mime_type } | Content::Audio { data, mime_type } => STANDARD
                .decode(data)
                .ok()
                .map(|bytes| (bytes, mime_type.as_str())),
            _ => None,
        }
    }
}

//! Content blocks, annotations, roles and resource contents.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{
    BorrowedStrDeserializer, I128Deserializer, MapAccessDeserializer, MapDeserializer,
    SeqAccessDeserializer, StringDeserializer, U128Deserializer,
};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Number, Value};

use super::de::CowKey;
use super::{Map, ResourceLink};

/// Who a message or a piece of content belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// The person using the application (`"user"`).
    User,
    /// The model's side of the conversation (`"assistant"`).
    Assistant,
}

/// Hints about how a piece of content is meant to be used.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who the content is intended for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::number::serialize_opt"
    )]
    pub priority: Option<f64>,
    /// ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(Annotations {
    audience: "audience" optional,
    priority: "priority" optional,
    last_modified: "lastModified" optional,
});

setters!(Annotations {
    with_audience => audience: Vec<Role>,
    with_priority => priority: f64,
    with_last_modified => last_modified: String,
});

/// A `{"type": "text"}` content block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(TextContent {
    text: "text" required,
    annotations: "annotations" optional,
    meta: "_meta" optional,
});

impl TextContent {
    /// A text block holding `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            annotations: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(TextContent { with_annotations => annotations: Annotations, with_meta => meta: Map });

/// A `{"type": "image"}` content block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ImageContent {
    /// Base64-encoded image data.
    pub data: String,
    /// The image's MIME type, such as `image/png`.
    pub mime_type: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ImageContent {
    data: "data" required,
    mime_type: "mimeType" required,
    annotations: "annotations" optional,
    meta: "_meta" optional,
});

impl ImageContent {
    /// An image block from base64 `data` of type `mime_type`.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(ImageContent { with_annotations => annotations: Annotations, with_meta => meta: Map });

/// A `{"type": "audio"}` content block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AudioContent {
    /// Base64-encoded audio data.
    pub data: String,
    /// The audio's MIME type, such as `audio/wav`.
    pub mime_type: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(AudioContent {
    data: "data" required,
    mime_type: "mimeType" required,
    annotations: "annotations" optional,
    meta: "_meta" optional,
});

impl AudioContent {
    /// An audio block from base64 `data` of type `mime_type`.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(AudioContent { with_annotations => annotations: Annotations, with_meta => meta: Map });

/// A `{"type": "resource"}` content block: a resource's contents inline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(EmbeddedResource {
    resource: "resource" required,
    annotations: "annotations" optional,
    meta: "_meta" optional,
});

impl EmbeddedResource {
    /// A block embedding `resource`.
    pub fn new(resource: ResourceContents) -> Self {
        Self {
            resource,
            annotations: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(EmbeddedResource { with_annotations => annotations: Annotations, with_meta => meta: Map });

/// One content block, chosen by its `"type"` member.
///
/// A block of any other type, or one without a string `"type"`, is kept verbatim in
/// [`Content::Unknown`] and written back unchanged. A block of a known type whose members do not
/// fit is an error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Content {
    /// `"text"`.
    Text(TextContent),
    /// `"image"`.
    Image(ImageContent),
    /// `"audio"`.
    Audio(AudioContent),
    /// `"resource_link"`: a pointer to a resource the client may read.
    ResourceLink(ResourceLink),
    /// `"resource"`: a resource's contents inline.
    Resource(EmbeddedResource),
    /// Any other block, as received (including its `"type"`).
    Unknown(Value),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(TextContent::new(text))
    }

    /// The text of a text block; `None` for every other block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// The block's `"type"` as it appears on the wire (`""` for an unknown block without one).
    pub fn kind(&self) -> &str {
        match self {
            Content::Text(_) => "text",
            Content::Image(_) => "image",
            Content::Audio(_) => "audio",
            Content::ResourceLink(_) => "resource_link",
            Content::Resource(_) => "resource",
            Content::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl From<TextContent> for Content {
    fn from(c: TextContent) -> Self {
        Content::Text(c)
    }
}

impl From<ImageContent> for Content {
    fn from(c: ImageContent) -> Self {
        Content::Image(c)
    }
}

impl From<AudioContent> for Content {
    fn from(c: AudioContent) -> Self {
        Content::Audio(c)
    }
}

impl From<ResourceLink> for Content {
    fn from(c: ResourceLink) -> Self {
        Content::ResourceLink(c)
    }
}

impl From<EmbeddedResource> for Content {
    fn from(c: EmbeddedResource) -> Self {
        Content::Resource(c)
    }
}

/// A block's members with `"type"` written first.
#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(c) => Tagged {
                kind: "text",
                inner: c,
            }
            .serialize(s),
            Content::Image(c) => Tagged {
                kind: "image",
                inner: c,
            }
            .serialize(s),
            Content::Audio(c) => Tagged {
                kind: "audio",
                inner: c,
            }
            .serialize(s),
            Content::ResourceLink(c) => Tagged {
                kind: "resource_link",
                inner: c,
            }
            .serialize(s),
            Content::Resource(c) => Tagged {
                kind: "resource",
                inner: c,
            }
            .serialize(s),
            Content::Unknown(v) => v.serialize(s),
        }
    }
}

/// A known block's members, the `"type"` member left out so it does not land in `extra`: read
/// into the struct of its kind.
trait Block {
    fn read<T: DeserializeOwned>(self, kind: &str) -> Result<T, String>;
}

/// The members of a block read whole.
impl Block for Map {
    fn read<T: DeserializeOwned>(mut self, kind: &str) -> Result<T, String> {
        self.shift_remove("type");
        serde_json::from_value(Value::Object(self))
            .map_err(|e| format!("invalid `{kind}` content block: {e}"))
    }
}

/// The members of a block (no name repeated) and where its `"type"` is among them: read
/// straight into the struct, with no intermediate map.
impl Block for (Members<'_>, usize) {
    fn read<T: DeserializeOwned>(self, kind: &str) -> Result<T, String> {
        let (members, type_at) = self;
        let rest = members
            .into_iter()
            .enumerate()
            .filter(|(i, _)| *i != type_at)
            .map(|(_, member)| member);
        T::deserialize(MapDeserializer::<_, serde_json::Error>::new(rest))
            .map_err(|e| format!("invalid `{kind}` content block: {e}"))
    }
}

/// The known block kinds: a block of one of them read into its variant, `Err(block)` given
/// back for any other kind.
fn known<B: Block>(kind: &str, block: B) -> Result<Result<Content, String>, B> {
    Ok(match kind {
        "text" => block.read(kind).map(Content::Text),
        "image" => block.read(kind).map(Content::Image),
        "audio" => block.read(kind).map(Content::Audio),
        "resource_link" => block.read(kind).map(Content::ResourceLink),
        "resource" => block.read(kind).map(Content::Resource),
        _ => return Err(block),
    })
}

/// A block read whole, by the rules it was always read with: a known `"type"` (the last one,
/// when there are several) picks the struct, anything else is [`Content::Unknown`].
fn from_value(value: Value) -> Result<Content, String> {
    let Value::Object(map) = value else {
        return Ok(Content::Unknown(value));
    };
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    known(&kind, map).unwrap_or_else(|map| Ok(Content::Unknown(Value::Object(map))))
}

/// The members of a block, in document order, each read as a [`Value`].
type Members<'de> = Vec<(Cow<'de, str>, Value)>;

/// Most members a block may have to take the member-by-member path (the check for repeated
/// names is quadratic); a larger block is read as a map.
const MAX_MEMBERS: usize = 16;

/// A block from its members. When no name repeats, a known block is read member by member
/// (no intermediate map); otherwise the members become a map as [`Value`] would build it
/// (a repeated name keeps its first place and its last value) and [`from_value`] reads it.
fn from_members(mut members: Members<'_>) -> Result<Content, String> {
    let distinct = members.len() <= MAX_MEMBERS
        && members
            .iter()
            .enumerate()
            .all(|(i, (name, _))| members[..i].iter().all(|(other, _)| other != name));
    let type_at = members.iter().position(|(name, _)| name == "type");
    if let (true, Some(at)) = (distinct, type_at) {
        if let Value::String(kind) = &mut members[at].1 {
            // The kind is moved out for the time of the match (the read leaves `"type"` out).
            let kind = std::mem::take(kind);
            match known(&kind, (members, at)) {
                Ok(content) => return content,
                Err((back, _)) => {
                    members = back;
                    members[at].1 = Value::String(kind);
                }
            }
        }
    }
    let mut map = Map::new();
    for (name, value) in members {
        map.insert(name.into_owned(), value);
    }
    from_value(Value::Object(map))
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A known block that does not fit is an error raised once the whole block is read,
        // outside the deserializer's own call (so it names the same place in the input).
        d.deserialize_any(ContentVisitor)?.map_err(D::Error::custom)
    }
}

/// Reads any JSON value as [`Value`] does; an object's members are kept apart, so a known
/// block is read straight from them.
struct ContentVisitor;

impl ContentVisitor {
    fn unknown<E>(value: Value) -> Result<Result<Content, String>, E> {
        Ok(Ok(Content::Unknown(value)))
    }
}

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Result<Content, String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Self::unknown(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Self::unknown(Value::Number(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
        Self::unknown(Value::deserialize(I128Deserializer::<E>::new(v))?)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Self::unknown(Value::Number(v.into()))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
        Self::unknown(Value::deserialize(U128Deserializer::<E>::new(v))?)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Self::unknown(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Self::unknown(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Self::unknown(Value::String(v))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Self::unknown(Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Self::unknown(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Ok(from_value(Value::deserialize(d)?))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Self::unknown(Value::deserialize(SeqAccessDeserializer::new(seq))?)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some(first) = map.next_key_seed(CowKey(PhantomData))? else {
            return Ok(from_value(Value::Object(Map::new())));
        };
        if first == RAW_VALUE_TOKEN {
            // serde_json's marker of a raw value: let `Value` read the object as it does.
            let whole = Replay {
                first: Some(first),
                rest: map,
            };
            return Ok(from_value(Value::deserialize(MapAccessDeserializer::new(
                whole,
            ))?));
        }
        let mut members: Members<'de> = Vec::with_capacity(4);
        members.push((first, map.next_value()?));
        while let Some(name) = map.next_key_seed(CowKey(PhantomData))? {
            members.push((name, map.next_value()?));
        }
        Ok(from_members(members))
    }
}

/// The first member name of an object `Value` marks as raw JSON (feature `raw_value`).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A map whose first name was already read: gives it again, then the rest.
struct Replay<'de, A> {
    first: Option<Cow<'de, str>>,
    rest: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(Cow::Borrowed(name)) => seed
                .deserialize(BorrowedStrDeserializer::new(name))
                .map(Some),
            Some(Cow::Owned(name)) => seed.deserialize(StringDeserializer::new(name)).map(Some),
            None => self.rest.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.rest.next_value_seed(seed)
    }
}

/// The contents of a resource whose data is text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(TextResourceContents {
    uri: "uri" required,
    mime_type: "mimeType" optional,
    text: "text" required,
    meta: "_meta" optional,
});

impl TextResourceContents {
    /// The text contents of `uri`.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(TextResourceContents { with_mime_type => mime_type: String, with_meta => meta: Map });

/// The contents of a resource whose data is binary.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded data.
    pub blob: String,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(BlobResourceContents {
    uri: "uri" required,
    mime_type: "mimeType" optional,
    blob: "blob" required,
    meta: "_meta" optional,
});

impl BlobResourceContents {
    /// The binary contents of `uri`, `blob` being base64.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            blob: blob.into(),
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(BlobResourceContents { with_mime_type => mime_type: String, with_meta => meta: Map });

/// A resource's contents: text or a blob, told apart by which member is present.
///
/// An object with a `text` member is [`ResourceContents::Text`]; otherwise one with `blob` is
/// [`ResourceContents::Blob`]; an object with neither is an error.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text data.
    Text(TextResourceContents),
    /// Binary data.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// The resource's URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(c) => &c.uri,
            ResourceContents::Blob(c) => &c.uri,
        }
    }

    /// The MIME type, if given.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(c) => c.mime_type.as_deref(),
            ResourceContents::Blob(c) => c.mime_type.as_deref(),
        }
    }

    /// The text of text contents; `None` for a blob.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(c) => Some(&c.text),
            ResourceContents::Blob(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let has = |key| value.get(key).is_some();
        let contents = if has("text") {
            serde_json::from_value(value).map(ResourceContents::Text)
        } else if has("blob") {
            serde_json::from_value(value).map(ResourceContents::Blob)
        } else {
            return Err(D::Error::custom(
                "resource contents carry neither `text` nor `blob`",
            ));
        };
        contents.map_err(|e| D::Error::custom(format!("invalid resource contents: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::round_trip;
    use super::*;

    #[test]
    fn text_block_with_annotations_round_trips() {
        let wire = json!({
            "type": "text",
            "text": "Sunny, 21 °C",
            "annotations": {"audience": ["user", "assistant"], "priority": 0.8,
                            "lastModified": "2025-11-25T10:00:00Z"},
            "_meta": {"example.com/source": "station-7"},
            "lang": "en"
        });
        let content: Content = round_trip(&wire);
        assert_eq!(content.as_text(), Some("Sunny, 21 °C"));
        let Content::Text(text) = &content else {
            panic!("not text: {content:?}")
        };
        let annotations = text.annotations.as_ref().expect("annotations");
        assert_eq!(
            annotations.audience,
            Some(vec![Role::User, Role::Assistant])
        );
        assert_eq!(text.extra.get("lang"), Some(&json!("en")));
        assert!(
            !text.extra.contains_key("type"),
            "type must not leak into extra"
        );
    }

    #[test]
    fn type_is_written_first() {
        let text = serde_json::to_string(&Content::text("hi")).expect("serialise");
        assert_eq!(text, r#"{"type":"text","text":"hi"}"#);
    }

    #[test]
    fn unknown_and_untyped_blocks_are_kept_verbatim() {
        for wire in [
            json!({"type": "hologram", "x": 1}),
            json!({"x": 1}),
            json!("bare"),
        ] {
            let content: Content = round_trip(&wire);
            assert_eq!(content, Content::Unknown(wire.clone()));
        }
        let hologram: Content = serde_json::from_value(json!({"type": "hologram"})).expect("parse");
        assert_eq!(hologram.kind(), "hologram");
    }

    #[test]
    fn malformed_known_block_is_an_error() {
        let err = serde_json::from_value::<Content>(json!({"type": "image", "data": "AAAA"}))
            .expect_err("mimeType is required");
        assert!(err.to_string().contains("`image`"), "{err}");
    }

    #[test]
    fn resource_contents_pick_text_or_blob() {
        let text: ResourceContents = round_trip(&json!({
            "uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# Notes"
        }));
        assert_eq!(text.as_text(), Some("# Notes"));
        let blob: ResourceContents = round_trip(&json!({
            "uri": "file:///logo.png", "mimeType": "image/png", "blob": "iVBORw0KGgo=",
            "_meta": {"k": 1}
        }));
        assert!(matches!(blob, ResourceContents::Blob(_)));
        assert_eq!(blob.mime_type(), Some("image/png"));
        let neither = serde_json::from_value::<ResourceContents>(json!({"uri": "file:///x"}));
        assert!(neither.is_err());
    }
}

//! MCP model types: the client's view of the 2025-11-25 schema.
//!
//! Every struct keeps the fields it does not know in `extra`, so a value parsed from the wire and
//! serialised again carries the same members. Content blocks of an unknown `type` are kept
//! verbatim in [`Content::Unknown`]. Optional fields that arrive as `null` are read as absent.
//!
//! Numbers typed `f64` (progress, priority, temperature) are written back as integers when they
//! hold a whole value, the way JavaScript peers write them.
//!
//! | file | types |
//! |---|---|
//! | `init.rs` | handshake: [`Implementation`], capabilities, [`InitializeResult`] |
//! | `content.rs` | [`Content`] blocks, [`Annotations`], [`Role`], [`ResourceContents`] |
//! | `tools.rs` | [`Tool`], [`ListToolsResult`], [`CallToolResult`] |
//! | `resources.rs` | [`Resource`], [`ResourceTemplate`], their list and read results |
//! | `prompts.rs` | [`Prompt`], [`GetPromptResult`], completion |
//! | `notifications.rs` | logging, progress, resource updates, cancellation |
//! | `client.rs` | requests a server sends: roots, sampling, elicitation |
//! | `tasks.rs` | tasks (2025-11-25): [`Task`], [`TaskStatus`], [`CreateTaskResult`], [`TasksCapability`] |

/// Writes chainable `with_*` setters for `Option` fields: `method => field: Type`.
macro_rules! setters {
    ($ty:ident { $($method:ident => $field:ident : $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets `", stringify!($field), "`.")]
                #[must_use]
                pub fn $method(mut self, value: impl Into<$t>) -> Self {
                    self.$field = Some(value.into());
                    self
                }
            )*
        }
    };
}

/// Writes `Deserialize` for a struct whose unknown members go to its `extra: Map`, one member
/// at a time (see `de.rs`): `Type { field: "wireName" kind, ... }`, in declaration order.
///
/// `kind` is `required` (absent is `missing field`), `optional` (an `Option`: absent or `null`
/// is `None`) or `default` (absent is `Default::default()`). A known member given twice is a
/// `duplicate field` error; the value of every known member is read as its field's type reads
/// it, so wrong types fail with the same message as before. `kind via f` reads the member as
/// `f`'s argument type and passes it through `f: fn(A) -> Result<Field, String>`, whose error
/// becomes the deserializer's (as `#[serde(deserialize_with)]` would).
///
/// `Type as Shown { ... }` names the struct `Shown` in its errors (`expected struct Shown`): a
/// crate-internal type that reads the same members as a model type fails as that type does.
macro_rules! deserialize_struct {
    ($ty:ident { $($field:ident : $wire:literal $kind:ident $(via $via:path)?),* $(,)? }) => {
        deserialize_struct!($ty as $ty { $($field : $wire $kind $(via $via)?),* });
    };
    ($ty:ident as $shown:ident { $($field:ident : $wire:literal $kind:ident $(via $via:path)?),* $(,)? }) => {
        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                #[allow(non_camel_case_types)]
                #[derive(Clone, Copy)]
                enum Field { $($field),* }
                const FIELDS: &[(&str, Field)] = &[$(($wire, Field::$field)),*];
                struct Fields;
                impl<'de> ::serde::de::Visitor<'de> for Fields {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($shown)))
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$ty, A::Error> {
                        $(let mut $field = None;)*
                        let mut extra = $crate::model::Map::new();
                        while let Some(key) = map.next_key_seed($crate::model::de::Keys(FIELDS))? {
                            match key {
                                $($crate::model::de::Key::Known(Field::$field) => {
                                    if $field.is_some() {
                                        return Err(<A::Error as ::serde::de::Error>::duplicate_field($wire));
                                    }
                                    $field = Some(deserialize_struct!(@read map A $($via)?));
                                })*
                                $crate::model::de::Key::Other(name) => {
                                    let value: ::serde_json::Value = map.next_value()?;
                                    extra.insert(name, value);
                                }
                            }
                        }
                        Ok($ty {
                            $($field: deserialize_struct!(@take $kind $field $wire A),)*
                            extra,
                        })
                    }
                }
                d.deserialize_map(Fields)
            }
        }
    };
    (@read $map:ident $a:ident) => {
        $map.next_value()?
    };
    (@read $map:ident $a:ident $via:path) => {
        $via($map.next_value()?).map_err(<$a::Error as ::serde::de::Error>::custom)?
    };
    (@take required $field:ident $wire:literal $a:ident) => {
        match $field {
            Some(v) => v,
            None => return Err(<$a::Error as ::serde::de::Error>::missing_field($wire)),
        }
    };
    (@take optional $field:ident $wire:literal $a:ident) => {
        $field.unwrap_or(None)
    };
    (@take default $field:ident $wire:literal $a:ident) => {
        $field.unwrap_or_default()
    };
}
pub(crate) use deserialize_struct;

mod client;
mod content;
pub(crate) mod de;
mod discover;
mod init;
mod notifications;
mod prompts;
mod resources;
mod skills;
mod tasks;
mod tools;

pub use client::{
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult,
    ListRootsResult, Root, SamplingMessage,
};
pub use content::{
    Annotations, AudioContent, BlobResourceContents, Content, EmbeddedResource, ImageContent,
    ResourceContents, Role, TextContent, TextResourceContents,
};
pub use discover::DiscoverResult;
pub use init::{
    ClientCapabilities, Implementation, InitializeResult, ListChangedCapability,
    ResourcesCapability, RootsCapability, ServerCapabilities,
};
pub use notifications::{
    Cancelled, LoggingLevel, LoggingMessage, ParseLoggingLevelError, Progress, ProgressToken,
    ResourceUpdated,
};
pub use prompts::{
    CompleteResult, Completion, CompletionReference, GetPromptResult, ListPromptsResult, Prompt,
    PromptArgument, PromptMessage,
};
pub use resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource, ResourceLink,
    ResourceTemplate,
};
pub use skills::{ListSkillsResult, SkillEntry, SkillFile, SkillResources, SKILLS_EXTENSION};
pub use tasks::{
    related_task_id, CancelTaskResult, CreateTaskResult, GetTaskResult, ListTasksParams,
    ListTasksResult, Task, TaskIdParams, TaskMetadata, TaskStatus, TaskSupport, TasksCapability,
    MODEL_IMMEDIATE_RESPONSE_META, RELATED_TASK_META,
};
pub use tools::{CallToolResult, ListToolsResult, Tool, ToolAnnotations};

/// The protocol revision this client asks for in `initialize`.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every revision this client accepts from a server, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The JSON object type used for `_meta`, `extra` and free-form maps.
pub(crate) type Map = serde_json::Map<String, serde_json::Value>;

/// `serialize_with` helpers that write whole `f64` values as JSON integers.
mod number {
    use serde::Serializer;

    /// 2^53: beyond it an `f64` no longer holds every integer.
    const EXACT: f64 = 9_007_199_254_740_992.0;

    pub(super) fn serialize<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
        if value.fract() == 0.0 && value.abs() <= EXACT {
            // Exact: the value is whole and within the range an i64 holds.
            s.serialize_i64(*value as i64)
        } else {
            s.serialize_f64(*value)
        }
    }

    pub(super) fn serialize_opt<S: Serializer>(
        value: &Option<f64>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => serialize(v, s),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod de_reference;
#[cfg(test)]
mod de_tests;

#[cfg(test)]
pub(crate) mod testing {
    use serde::{de::DeserializeOwned, Serialize};
    use serde_json::Value;

    /// Parses `wire` as `T`, serialises it, and asserts the JSON is unchanged.
    pub(crate) fn round_trip<T: DeserializeOwned + Serialize>(wire: &Value) -> T {
        let parsed: T = serde_json::from_value(wire.clone()).expect("parse");
        let back = serde_json::to_value(&parsed).expect("serialise");
        assert_eq!(&back, wire, "round trip changed the JSON");
        parsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_version_is_first_supported() {
        assert_eq!(SUPPORTED_PROTOCOL_VERSIONS[0], LATEST_PROTOCOL_VERSION);
    }

    #[derive(serde::Serialize)]
    struct Num {
        #[serde(serialize_with = "number::serialize")]
        n: f64,
    }

    #[test]
    fn whole_floats_are_written_as_integers() {
        let text = |n| serde_json::to_string(&Num { n }).expect("serialise");
        assert_eq!(text(50.0), r#"{"n":50}"#);
        assert_eq!(text(-3.0), r#"{"n":-3}"#);
        assert_eq!(text(0.25), r#"{"n":0.25}"#);
        assert_eq!(text(1e300), r#"{"n":1e+300}"#);
    }
}

//! Resources, resource templates, and the results that carry them.

use serde::Serialize;
use serde_json::Value;

use super::{Annotations, Map, ResourceContents};

/// A resource the server can read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(Resource {
    uri: "uri" required,
    name: "name" required,
    title: "title" optional,
    description: "description" optional,
    mime_type: "mimeType" optional,
    size: "size" optional,
    annotations: "annotations" optional,
    icons: "icons" optional,
    meta: "_meta" optional,
});

/// A `{"type": "resource_link"}` content block: a [`Resource`]'s members.
pub type ResourceLink = Resource;

impl Resource {
    /// The resource at `uri`, called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
            icons: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(Resource {
    with_title => title: String,
    with_description => description: String,
    with_mime_type => mime_type: String,
    with_size => size: u64,
    with_annotations => annotations: Annotations,
    with_icons => icons: Vec<Value>,
    with_meta => meta: Map,
});

/// The result of `resources/list`: one page of resources.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourcesResult {
    /// The resources on this page.
    pub resources: Vec<Resource>,
    /// Opaque cursor for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ListResourcesResult {
    resources: "resources" required,
    next_cursor: "nextCursor" optional,
    meta: "_meta" optional,
});

impl ListResourcesResult {
    /// A page holding `resources`.
    pub fn new(resources: Vec<Resource>) -> Self {
        Self {
            resources,
            ..Self::default()
        }
    }
}

setters!(ListResourcesResult { with_next_cursor => next_cursor: String, with_meta => meta: Map });

/// A family of resources named by an RFC 6570 URI template.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The URI template, such as `file:///{path}`.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type every matching resource has, if they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ResourceTemplate {
    uri_template: "uriTemplate" required,
    name: "name" required,
    title: "title" optional,
    description: "description" optional,
    mime_type: "mimeType" optional,
    annotations: "annotations" optional,
    icons: "icons" optional,
    meta: "_meta" optional,
});

impl ResourceTemplate {
    /// The template `uri_template`, called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            icons: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(ResourceTemplate {
    with_title => title: String,
    with_description => description: String,
    with_mime_type => mime_type: String,
    with_annotations => annotations: Annotations,
    with_icons => icons: Vec<Value>,
    with_meta => meta: Map,
});

/// The result of `resources/templates/list`: one page of templates.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListResourceTemplatesResult {
    /// The templates on this page.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Opaque cursor for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ListResourceTemplatesResult {
    resource_templates: "resourceTemplates" required,
    next_cursor: "nextCursor" optional,
    meta: "_meta" optional,
});

impl ListResourceTemplatesResult {
    /// A page holding `resource_templates`.
    pub fn new(resource_templates: Vec<ResourceTemplate>) -> Self {
        Self {
            resource_templates,
            ..Self::default()
        }
    }
}

setters!(ListResourceTemplatesResult {
    with_next_cursor => next_cursor: String,
    with_meta => meta: Map,
});

/// The result of `resources/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// The contents: one entry, or several when the URI names a collection.
    pub contents: Vec<ResourceContents>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ReadResourceResult {
    contents: "contents" required,
    meta: "_meta" optional,
});

impl ReadResourceResult {
    /// A result holding `contents`.
    pub fn new(contents: Vec<ResourceContents>) -> Self {
        Self {
            contents,
            ..Self::default()
        }
    }
}

setters!(ReadResourceResult { with_meta => meta: Map });

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::round_trip;
    use super::*;

    #[test]
    fn list_resources_result_round_trips() {
        let wire = json!({
            "resources": [
                {"uri": "file:///project/README.md", "name": "README.md", "title": "Read me",
                 "description": "Project overview", "mimeType": "text/markdown", "size": 1024,
                 "annotations": {"audience": ["user"], "priority": 0.5},
                 "icons": [{"src": "https://example.com/md.svg"}], "_meta": {"etag": "x1"},
                 "checksum": "sha256:00"},
                {"uri": "https://example.com/data.json", "name": "data"}
            ],
            "nextCursor": "eyJwIjoyfQ=="
        });
        let list: ListResourcesResult = round_trip(&wire);
        assert_eq!(list.resources[0].size, Some(1024));
        assert_eq!(
            list.resources[0].extra.get("checksum"),
            Some(&json!("sha256:00"))
        );
        assert_eq!(list.resources[1].mime_type, None);
    }

    #[test]
    fn list_resource_templates_result_round_trips() {
        let wire = json!({
            "resourceTemplates": [
                {"uriTemplate": "file:///{path}", "name": "project-files", "title": "Files",
                 "mimeType": "application/octet-stream"}
            ],
            "_meta": {"page": 1}
        });
        let list: ListResourceTemplatesResult = round_trip(&wire);
        assert_eq!(list.resource_templates[0].uri_template, "file:///{path}");
        assert_eq!(list.next_cursor, None);
    }

    #[test]
    fn read_resource_result_round_trips() {
        let wire = json!({
            "contents": [
                {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"},
                {"uri": "file:///b.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}
            ],
            "cacheHint": "no-store"
        });
        let result: ReadResourceResult = round_trip(&wire);
        assert_eq!(result.contents[0].as_text(), Some("hello"));
        assert_eq!(result.contents[1].uri(), "file:///b.png");
        assert!(result.extra.contains_key("cacheHint"));
    }
}

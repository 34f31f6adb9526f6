//! A Hub of 50 in-process servers × 30 tools with realistic names, descriptions and schemas,
//! for the tool-search test (`tests/agent_search.rs`) and its measurement
//! (`examples/bench_agent_tools.rs`). Each server is a `testing::TestServer`; its tools answer
//! `SERVER/TOOL ARGUMENTS`, so a test can see which server a call reached.
#![allow(dead_code, reason = "the test and the example use different parts")]

use std::sync::Arc;

use mcp_blocking::hub::Run;
use mcp_blocking::model::{CallToolResult, Content, Tool};
use mcp_blocking::testing::TestServer;
use mcp_blocking::{Hub, ServerConfig};
use serde_json::{json, Map, Value};

/// `(server, description, six nouns)`: five verbs over six nouns make each server's 30 tools.
pub const DOMAINS: [(&str, &str, [&str; 6]); 50] = [
    (
        "github",
        "GitHub repositories, issues, pull requests and code review",
        [
            "issue",
            "pull_request",
            "branch",
            "commit",
            "release",
            "workflow_run",
        ],
    ),
    (
        "gitlab",
        "GitLab projects, merge requests and CI pipelines",
        [
            "project",
            "merge_request",
            "pipeline",
            "runner",
            "snippet",
            "milestone",
        ],
    ),
    (
        "filesystem",
        "Read, write and search local files and directories",
        [
            "file",
            "directory",
            "symlink",
            "file_permission",
            "archive",
            "watch",
        ],
    ),
    (
        "postgres",
        "PostgreSQL databases: schemas, tables and SQL queries",
        [
            "table",
            "schema",
            "index",
            "query_plan",
            "role",
            "extension",
        ],
    ),
    (
        "mysql",
        "MySQL databases: tables, users and replication",
        [
            "database",
            "mysql_table",
            "mysql_user",
            "replica",
            "binlog",
            "trigger",
        ],
    ),
    (
        "slack",
        "Slack workspaces: channels, messages and users",
        [
            "channel",
            "message",
            "slack_user",
            "reaction",
            "thread",
            "reminder",
        ],
    ),
    (
        "jira",
        "Jira Cloud projects, issues, sprints and boards",
        [
            "jira_issue",
            "sprint",
            "board",
            "epic",
            "worklog",
            "jira_comment",
        ],
    ),
    (
        "confluence",
        "Confluence spaces, pages and comments",
        [
            "space",
            "page",
            "page_comment",
            "attachment",
            "label",
            "page_version",
        ],
    ),
    (
        "notion",
        "Notion pages, databases and blocks",
        [
            "notion_page",
            "notion_database",
            "block",
            "notion_comment",
            "notion_user",
            "property",
        ],
    ),
    (
        "linear",
        "Linear issues, cycles and teams",
        [
            "linear_issue",
            "cycle",
            "team",
            "linear_project",
            "roadmap",
            "triage_rule",
        ],
    ),
    (
        "stripe",
        "Stripe payments: customers, charges, invoices and subscriptions",
        [
            "customer",
            "charge",
            "invoice",
            "subscription",
            "refund",
            "payout",
        ],
    ),
    (
        "shopify",
        "Shopify stores: products, orders and inventory",
        [
            "product",
            "order",
            "inventory_level",
            "collection",
            "discount",
            "fulfillment",
        ],
    ),
    (
        "aws_s3",
        "Amazon S3 buckets and objects",
        [
            "bucket",
            "object",
            "bucket_policy",
            "lifecycle_rule",
            "multipart_upload",
            "presigned_url",
        ],
    ),
    (
        "aws_ec2",
        "Amazon EC2 instances, volumes and security groups",
        [
            "instance",
            "volume",
            "security_group",
            "key_pair",
            "snapshot",
            "elastic_ip",
        ],
    ),
    (
        "kubernetes",
        "Kubernetes clusters: pods, deployments and services",
        [
            "pod",
            "deployment",
            "service",
            "configmap",
            "secret",
            "namespace",
        ],
    ),
    (
        "docker",
        "Docker containers, images, networks and volumes",
        [
            "container",
            "image",
            "network",
            "docker_volume",
            "compose_stack",
            "registry_login",
        ],
    ),
    (
        "terraform",
        "Terraform workspaces, plans and state",
        [
            "workspace",
            "plan",
            "state_version",
            "variable",
            "module",
            "provider",
        ],
    ),
    (
        "datadog",
        "Datadog metrics, monitors and dashboards",
        [
            "metric",
            "monitor",
            "dashboard",
            "log_query",
            "incident",
            "slo",
        ],
    ),
    (
        "sentry",
        "Sentry errors, issues and releases",
        [
            "sentry_issue",
            "event",
            "sentry_release",
            "alert_rule",
            "sentry_project",
            "breadcrumb",
        ],
    ),
    (
        "pagerduty",
        "PagerDuty incidents, schedules and on-call",
        [
            "pd_incident",
            "schedule",
            "oncall",
            "escalation_policy",
            "pd_service",
            "maintenance_window",
        ],
    ),
    (
        "google_drive",
        "Google Drive files, folders and sharing",
        [
            "drive_file",
            "folder",
            "permission",
            "shared_drive",
            "revision",
            "drive_comment",
        ],
    ),
    (
        "gmail",
        "Gmail messages, drafts, labels and filters",
        [
            "email",
            "draft",
            "gmail_label",
            "filter",
            "email_thread",
            "vacation_setting",
        ],
    ),
    (
        "google_calendar",
        "Google Calendar events and calendars",
        [
            "calendar_event",
            "calendar",
            "attendee",
            "free_busy",
            "calendar_acl",
            "recurring_event",
        ],
    ),
    (
        "google_sheets",
        "Google Sheets spreadsheets, ranges and charts",
        [
            "spreadsheet",
            "sheet",
            "cell_range",
            "chart",
            "named_range",
            "pivot_table",
        ],
    ),
    (
        "salesforce",
        "Salesforce CRM: accounts, contacts, leads and opportunities",
        [
            "account",
            "contact",
            "lead",
            "opportunity",
            "case",
            "campaign",
        ],
    ),
    (
        "hubspot",
        "HubSpot marketing and CRM: deals, companies and emails",
        [
            "deal",
            "company",
            "marketing_email",
            "hubspot_contact",
            "form",
            "workflow",
        ],
    ),
    (
        "zendesk",
        "Zendesk support tickets, users and macros",
        [
            "ticket",
            "zendesk_user",
            "macro",
            "ticket_field",
            "satisfaction_rating",
            "help_article",
        ],
    ),
    (
        "intercom",
        "Intercom conversations, contacts and articles",
        [
            "conversation",
            "intercom_contact",
            "intercom_article",
            "segment",
            "tag",
            "admin",
        ],
    ),
    (
        "twilio",
        "Twilio SMS, calls and phone numbers",
        [
            "sms",
            "call",
            "phone_number",
            "recording",
            "conference",
            "verify_code",
        ],
    ),
    (
        "sendgrid",
        "SendGrid transactional email and templates",
        [
            "mail_send",
            "email_template",
            "suppression",
            "sender_identity",
            "email_stat",
            "contact_list",
        ],
    ),
    (
        "openweather",
        "Weather forecasts and current conditions",
        [
            "forecast",
            "current_weather",
            "weather_alert",
            "air_quality",
            "uv_index",
            "historical_weather",
        ],
    ),
    (
        "maps",
        "Maps: geocoding, directions and places",
        [
            "geocode",
            "route_directions",
            "place",
            "distance_matrix",
            "elevation",
            "timezone",
        ],
    ),
    (
        "spotify",
        "Spotify music: tracks, playlists and playback",
        ["track", "playlist", "album", "artist", "playback", "queue"],
    ),
    (
        "youtube",
        "YouTube videos, channels and comments",
        [
            "video",
            "youtube_channel",
            "video_comment",
            "caption",
            "youtube_playlist",
            "live_broadcast",
        ],
    ),
    (
        "figma",
        "Figma files, components and comments",
        [
            "figma_file",
            "component",
            "style",
            "figma_comment",
            "frame",
            "prototype",
        ],
    ),
    (
        "brew",
        "Install, update and manage macOS packages via Homebrew",
        [
            "formula",
            "cask",
            "tap",
            "service_daemon",
            "brew_bundle",
            "outdated_package",
        ],
    ),
    (
        "npm",
        "npm packages, versions and dist-tags",
        [
            "package",
            "package_version",
            "dist_tag",
            "npm_token",
            "maintainer",
            "dependency_audit",
        ],
    ),
    (
        "pypi",
        "Python packages on PyPI",
        [
            "pypi_project",
            "pypi_release",
            "wheel",
            "trusted_publisher",
            "pypi_user",
            "download_stat",
        ],
    ),
    (
        "cloudflare",
        "Cloudflare DNS, zones, workers and caches",
        [
            "dns_record",
            "zone",
            "worker",
            "cache_purge",
            "firewall_rule",
            "page_rule",
        ],
    ),
    (
        "vercel",
        "Vercel deployments, domains and environment variables",
        [
            "vercel_deployment",
            "domain",
            "env_var",
            "vercel_project",
            "build_log",
            "alias",
        ],
    ),
    (
        "redis",
        "Redis keys, streams and pub/sub",
        [
            "key",
            "stream",
            "channel_subscription",
            "hash_field",
            "sorted_set",
            "redis_config",
        ],
    ),
    (
        "elasticsearch",
        "Elasticsearch indices, documents and searches",
        [
            "es_index",
            "document",
            "search_query",
            "mapping",
            "alias_route",
            "ingest_pipeline",
        ],
    ),
    (
        "mongodb",
        "MongoDB collections, documents and aggregations",
        [
            "collection",
            "mongo_document",
            "aggregation",
            "mongo_index",
            "change_stream",
            "mongo_user",
        ],
    ),
    (
        "airtable",
        "Airtable bases, tables and records",
        [
            "base",
            "airtable_table",
            "record",
            "field",
            "view",
            "airtable_webhook",
        ],
    ),
    (
        "trello",
        "Trello boards, lists and cards",
        [
            "trello_board",
            "list",
            "card",
            "checklist",
            "trello_label",
            "power_up",
        ],
    ),
    (
        "asana",
        "Asana tasks, projects and portfolios",
        [
            "task",
            "asana_project",
            "portfolio",
            "goal",
            "asana_section",
            "asana_tag",
        ],
    ),
    (
        "zoom",
        "Zoom meetings, webinars and recordings",
        [
            "meeting",
            "webinar",
            "cloud_recording",
            "registrant",
            "zoom_user",
            "meeting_poll",
        ],
    ),
    (
        "dropbox",
        "Dropbox files, folders and shared links",
        [
            "dropbox_file",
            "dropbox_folder",
            "shared_link",
            "file_request",
            "team_member",
            "paper_doc",
        ],
    ),
    (
        "translate",
        "Translate text and detect languages",
        [
            "translation",
            "language",
            "glossary",
            "document_translation",
            "detection",
            "transliteration",
        ],
    ),
    (
        "arxiv",
        "Search and read scientific papers on arXiv",
        [
            "paper",
            "author",
            "arxiv_category",
            "citation",
            "abstract",
            "pdf",
        ],
    ),
];

/// The verbs, and the sentence each starts a description with.
const VERBS: [(&str, &str); 5] = [
    (
        "list",
        "Lists the {n}s of the {d}, newest first, with paging.",
    ),
    (
        "get",
        "Gets one {n} of the {d} by its id, with all its fields.",
    ),
    (
        "create",
        "Creates a {n} in the {d} and returns the new {n}'s id.",
    ),
    (
        "update",
        "Updates fields of an existing {n} in the {d}; fields left out keep their value.",
    ),
    (
        "delete",
        "Deletes a {n} from the {d}. This cannot be undone.",
    ),
];

fn prop(kind: &str, description: String) -> Value {
    json!({"type": kind, "description": description})
}

/// The input schema of `verb` on `noun`: 2 to 6 described properties, as real servers write them.
fn schema(verb: &str, noun: &str) -> Value {
    let n = noun.replace('_', " ");
    let mut p = Map::new();
    let mut required = vec![];
    match verb {
        "list" => {
            p.insert(
                "query".into(),
                prop(
                    "string",
                    format!("Only {n}s whose name or text contains this"),
                ),
            );
            p.insert("limit".into(), json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 25, "description": "Most results per page"}));
            p.insert(
                "cursor".into(),
                prop(
                    "string",
                    "The cursor of the next page, from the previous answer".into(),
                ),
            );
            p.insert("sort".into(), json!({"type": "string", "enum": ["created", "updated", "name"], "description": "Sort order"}));
        }
        "get" => {
            p.insert("id".into(), prop("string", format!("The {n}'s id")));
            p.insert("fields".into(), json!({"type": "array", "items": {"type": "string"}, "description": "Only these fields (default: all)"}));
            required.push("id");
        }
        "create" => {
            p.insert("name".into(), prop("string", format!("The new {n}'s name")));
            p.insert(
                "description".into(),
                prop("string", format!("A description of the {n}")),
            );
            p.insert("tags".into(), json!({"type": "array", "items": {"type": "string"}, "description": "Labels to attach"}));
            p.insert("metadata".into(), json!({"type": "object", "additionalProperties": {"type": "string"}, "description": "Free key-value pairs"}));
            required.push("name");
        }
        "update" => {
            p.insert("id".into(), prop("string", format!("The {n}'s id")));
            p.insert("name".into(), prop("string", "The new name".into()));
            p.insert(
                "description".into(),
                prop("string", "The new description".into()),
            );
            p.insert(
                "archived".into(),
                prop("boolean", format!("Whether the {n} is archived")),
            );
            required.push("id");
        }
        _ => {
            p.insert("id".into(), prop("string", format!("The {n}'s id")));
            p.insert(
                "confirm".into(),
                prop("boolean", "Must be true: deleting cannot be undone".into()),
            );
            required.extend(["id", "confirm"]);
        }
    }
    json!({"type": "object", "properties": p, "required": required, "additionalProperties": false})
}

/// The 30 tools of one domain.
pub fn tools(description: &str, nouns: &[&str; 6]) -> Vec<Tool> {
    let d = description.split(':').next().unwrap_or(description);
    let mut out = Vec::new();
    for noun in nouns {
        for (verb, sentence) in VERBS {
            let mut t = Tool::new(format!("{verb}_{noun}"), schema(verb, noun));
            t.description = Some(
                sentence
                    .replace("{n}", &noun.replace('_', " "))
                    .replace("{d}", d),
            );
            out.push(t);
        }
    }
    out
}

/// The 50 servers, each a `TestServer` with its 30 tools and instructions.
pub fn servers() -> Vec<(ServerConfig, TestServer)> {
    DOMAINS
        .iter()
        .map(|(name, description, nouns)| {
            let mut server = TestServer::new(*name)
                .instructions(format!("Tools for {description}. Ids are opaque strings."));
            for tool in tools(description, nouns) {
                let who = format!("{name}/{}", tool.name);
                server = server.tool(tool, move |call| {
                    Ok(CallToolResult::success(vec![Content::text(format!(
                        "{who} {}",
                        call.arguments()
                    ))]))
                });
            }
            let config = ServerConfig::stdio(*name, "in-process").with_description(*description);
            (config, server)
        })
        .collect()
}

/// A Hub of the 50 servers, each an in-process client injected in place of its configured
/// server (so no process starts), with the servers kept to read what they received.
pub fn hub() -> (Hub, Vec<(String, TestServer)>) {
    let servers = servers();
    let hub = Hub::new(servers.iter().map(|(c, _)| c.clone()));
    let clients = servers
        .iter()
        .map(|(c, s)| Arc::new(s.client_builder_for(c.clone()).connect().expect("connects")))
        .collect();
    hub.inject(clients, vec![]);
    let set = hub.resolve(&Run::new());
    assert_eq!(set.tools.len(), 1500, "{:?}", set.failed);
    (
        hub,
        servers
            .into_iter()
            .map(|(c, s)| (c.name().to_owned(), s))
            .collect(),
    )
}

/// The bytes of the `tools` array of a recorded request body.
pub fn tool_bytes(body: &Value) -> usize {
    body.get("tools").map_or(0, |t| t.to_string().len())
}

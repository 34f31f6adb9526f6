//! The tool registry: the names tools are offered under, collisions between servers, and the
//! route from an offered name back to its server and the server's own tool name.
//!
//! Naming is a pure function of the connected servers (in configuration order) and their tools,
//! so names are stable across runs as long as the same servers are connected.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::client::Client;
use crate::model::Tool;

/// What to do when two servers offer a tool of the same name.
///
/// ```
/// use mcp_blocking::Hub;
/// use mcp_blocking::hub::CollisionPolicy;
/// let hub = Hub::builder().collisions(CollisionPolicy::PrefixAll).build();
/// # drop(hub);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CollisionPolicy {
    /// Tools whose name is unique keep it; every tool of a colliding name is offered as
    /// `server__tool` (the default).
    #[default]
    PrefixColliding,
    /// Every tool is offered as `server__tool`, colliding or not.
    PrefixAll,
    /// The first server (in configuration order) keeps the name; the same-named tools of later
    /// servers are left out, with a warning.
    FirstWins,
}

/// A tool as the [`Hub`](crate::Hub) offers it: the name to call it by, the server it routes
/// to, and the server's own definition.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HubTool {
    /// The name the tool is offered and called by (`server__tool` after a collision).
    pub name: String,
    /// The server that runs it.
    pub server: String,
    /// The server's own definition (its `name` is the server's name for the tool).
    pub tool: Tool,
}

impl HubTool {
    /// The tool's description, `""` when it has none.
    pub fn description(&self) -> &str {
        self.tool.description()
    }

    /// Whether an allow-list entry names this tool: its offered name or the server's own name.
    pub fn matches(&self, entry: &str) -> bool {
        self.name == entry || self.tool.name == entry
    }
}

/// Names every tool of `servers` (in order) under `policy`; the result keeps server order, then
/// each server's tool order. Offered names are unique.
pub(crate) fn assign_names(
    servers: &[(&str, &[Tool])],
    policy: CollisionPolicy,
    separator: &str,
) -> Vec<HubTool> {
    let mut owners: HashMap<&str, usize> = HashMap::new();
    for (_, tools) in servers {
        let mut seen_here = HashSet::new();
        for t in *tools {
            if seen_here.insert(t.name.as_str()) {
                *owners.entry(t.name.as_str()).or_default() += 1;
            }
        }
    }
    let mut out = Vec::new();
    let mut taken: HashSet<String> = HashSet::new();
    for (server, tools) in servers {
        for t in *tools {
            let colliding = owners.get(t.name.as_str()).copied().unwrap_or(0) > 1;
            let name = match policy {
                CollisionPolicy::PrefixAll => prefixed(server, &t.name, separator),
                CollisionPolicy::PrefixColliding if colliding => {
                    prefixed(server, &t.name, separator)
                }
                _ => t.name.clone(),
            };
            if !taken.insert(name.clone()) {
                log::warn!(
                    "server `{server}`: tool `{}` left out: the name `{name}` is already taken",
                    t.name
                );
                continue;
            }
            out.push(HubTool {
                name,
                server: (*server).to_owned(),
                tool: t.clone(),
            });
        }
    }
    out
}

/// `server<sep>tool`, with characters LLM APIs refuse in tool names (anything but ASCII
/// letters, digits, `_` and `-`) in the server name replaced by `_`.
pub(crate) fn prefixed(server: &str, tool: &str, separator: &str) -> String {
    let clean: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{clean}{separator}{tool}")
}

/// Where a call goes.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) server: Arc<str>,
    pub(crate) tool: String,
    pub(crate) client: Arc<Client>,
}

/// A snapshot of the offered tools and their routes; replaced whole when anything changes, so
/// a caller holds it only as long as it takes to clone one route.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: Vec<HubTool>,
    pub(crate) routes: HashMap<String, Route>,
}

impl Registry {
    /// Names the tools of every server given (so names stay stable while a server is degraded),
    /// then offers and routes those of the servers marked live.
    pub(crate) fn build(
        servers: &[(&str, &[Tool], Arc<Client>, bool)],
        policy: CollisionPolicy,
        separator: &str,
    ) -> Registry {
        let named: Vec<(&str, &[Tool])> = servers.iter().map(|(s, t, _, _)| (*s, *t)).collect();
        let clients: HashMap<&str, &Arc<Client>> = servers
            .iter()
            .filter(|(_, _, _, live)| *live)
            .map(|(s, _, c, _)| (*s, c))
            .collect();
        let tools: Vec<HubTool> = assign_names(&named, policy, separator)
            .into_iter()
            .filter(|t| clients.contains_key(t.server.as_str()))
            .collect();
        let mut routes = HashMap::with_capacity(tools.len());
        for t in &tools {
            if let Some(client) = clients.get(t.server.as_str()) {
                routes.insert(
                    t.name.clone(),
                    Route {
                        server: t.server.as_str().into(),
                        tool: t.tool.name.clone(),
                        client: Arc::clone(client),
                    },
                );
            }
        }
        Registry { tools, routes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools(names: &[&str]) -> Vec<Tool> {
        names
            .iter()
            .map(|n| Tool::new(*n, json!({"type": "object"})))
            .collect()
    }

    fn names(v: &[HubTool]) -> Vec<(String, String, String)> {
        v.iter()
            .map(|t| (t.name.clone(), t.server.clone(), t.tool.name.clone()))
            .collect()
    }

    fn n(a: &str, b: &str, c: &str) -> (String, String, String) {
        (a.into(), b.into(), c.into())
    }

    #[test]
    fn unique_names_are_kept_and_collisions_prefixed() {
        let a = tools(&["echo", "add"]);
        let b = tools(&["echo", "search"]);
        let got = assign_names(
            &[("a", &a), ("b", &b)],
            CollisionPolicy::PrefixColliding,
            "__",
        );
        assert_eq!(
            names(&got),
            [
                n("a__echo", "a", "echo"),
                n("add", "a", "add"),
                n("b__echo", "b", "echo"),
                n("search", "b", "search"),
            ]
        );
    }

    #[test]
    fn prefix_all_prefixes_everything() {
        let a = tools(&["echo"]);
        let got = assign_names(&[("my.srv", &a)], CollisionPolicy::PrefixAll, "__");
        assert_eq!(names(&got), [n("my_srv__echo", "my.srv", "echo")]);
    }

    #[test]
    fn first_wins_drops_later_duplicates() {
        let a = tools(&["echo"]);
        let b = tools(&["echo", "x"]);
        let got = assign_names(&[("a", &a), ("b", &b)], CollisionPolicy::FirstWins, "__");
        assert_eq!(names(&got), [n("echo", "a", "echo"), n("x", "b", "x")]);
    }

    #[test]
    fn a_prefixed_name_that_clashes_with_a_real_one_is_left_out() {
        let a = tools(&["echo", "b__echo"]);
        let b = tools(&["echo"]);
        let got = assign_names(
            &[("a", &a), ("b", &b)],
            CollisionPolicy::PrefixColliding,
            "__",
        );
        assert_eq!(
            names(&got),
            [n("a__echo", "a", "echo"), n("b__echo", "a", "b__echo")]
        );
    }

    #[test]
    fn a_server_listing_a_name_twice_is_not_a_collision_with_itself() {
        let a = tools(&["echo", "echo"]);
        let got = assign_names(&[("a", &a)], CollisionPolicy::PrefixColliding, "-");
        assert_eq!(names(&got), [n("echo", "a", "echo")]);
    }

    #[test]
    fn allow_list_entries_match_offered_or_original_names() {
        let a = tools(&["echo"]);
        let b = tools(&["echo"]);
        let got = assign_names(
            &[("a", &a), ("b", &b)],
            CollisionPolicy::PrefixColliding,
            "__",
        );
        assert!(got[0].matches("a__echo") && got[0].matches("echo"));
        assert!(!got[0].matches("b__echo"));
    }
}

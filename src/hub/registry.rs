//! The tool registry: the names tools are offered under, collisions between servers, and the
//! route from an offered name back to its server and the server's own tool name.
//!
//! Naming is a pure function of the connected servers (in configuration order) and their tools,
//! so names are stable across runs as long as the same servers are connected.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::compact::KeptTool;
use super::names;
use crate::client::Client;
use crate::model::Tool;

/// A tool as naming sees it: its name on its server.
pub(crate) trait Named {
    fn tool_name(&self) -> &str;
}

impl Named for Tool {
    fn tool_name(&self) -> &str {
        &self.name
    }
}

impl Named for KeptTool {
    fn tool_name(&self) -> &str {
        &self.name
    }
}

/// What to do when two servers offer a tool of the same name.
///
/// Whatever the policy, every offered name matches `^[a-zA-Z0-9_-]{1,64}$`, the rule of the
/// OpenAI and Anthropic APIs: a name that does not (`files.read`, a 70-character name, a long
/// `server__tool`) has its other characters replaced by `_` and, when still too long or taken,
/// is cut and given a stable 8-hex suffix (a hash of the server and tool names), as in
/// `files_read` or `very_long_server__echo_1a2b3c4d`. Calls by the offered name reach the right
/// server and tool.
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
    /// The name the tool is offered and called by (`server__tool` after a collision); always
    /// matches `^[a-zA-Z0-9_-]{1,64}$` (see [`CollisionPolicy`]).
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
/// each server's tool order. Offered names are unique and all match `^[a-zA-Z0-9_-]{1,64}$`
/// (see [`names`](super::names)): names that already do are kept first, then the others are
/// sanitised and, when still too long or taken, shortened with a stable hash suffix.
#[cfg(test)]
pub(crate) fn assign_names(
    servers: &[(&str, &[Tool])],
    policy: CollisionPolicy,
    separator: &str,
) -> Vec<HubTool> {
    assign(servers, policy, separator)
        .into_iter()
        .map(|(s, t, name)| HubTool {
            name,
            server: servers[s].0.to_owned(),
            tool: servers[s].1[t].clone(),
        })
        .collect()
}

/// [`assign_names`] as positions: for each offered tool, its server's index in `servers`, the
/// tool's index in that server's list, and the name it is offered under.
fn assign<T: Named>(
    servers: &[(&str, &[T])],
    policy: CollisionPolicy,
    separator: &str,
) -> Vec<(usize, usize, String)> {
    let mut owners: HashMap<&str, usize> = HashMap::new();
    for (_, tools) in servers {
        let mut seen_here = HashSet::new();
        for t in *tools {
            if seen_here.insert(t.tool_name()) {
                *owners.entry(t.tool_name()).or_default() += 1;
            }
        }
    }
    // The name each tool asks for, before the API rule; `None` for a tool left out.
    let mut wanted: Vec<(&str, &str, String, (usize, usize))> = Vec::new();
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut first_owner: HashMap<&str, &str> = HashMap::new();
    for (si, (server, tools)) in servers.iter().enumerate() {
        for (ti, t) in tools.iter().enumerate() {
            let t = t.tool_name();
            if !seen.insert((server, t)) {
                log::warn!(
                    "server `{server}`: tool `{}` is listed twice; the second is left out",
                    t
                );
                continue;
            }
            let colliding = owners.get(t).copied().unwrap_or(0) > 1;
            let name = match policy {
                CollisionPolicy::PrefixAll => prefixed(server, t, separator),
                CollisionPolicy::PrefixColliding if colliding => prefixed(server, t, separator),
                CollisionPolicy::FirstWins if colliding => {
                    let owner = *first_owner.entry(t).or_insert(server);
                    if owner != *server {
                        log::warn!(
                            "server `{server}`: tool `{}` left out: server `{owner}` offers a \
                             tool of the same name",
                            t
                        );
                        continue;
                    }
                    t.to_owned()
                }
                _ => t.to_owned(),
            };
            wanted.push((server, t, name, (si, ti)));
        }
    }
    let mut taken: HashSet<String> = HashSet::new();
    let mut offered: Vec<Option<String>> = vec![None; wanted.len()];
    // Names the APIs already accept are kept, first come first served.
    for (i, (_, _, name, _)) in wanted.iter().enumerate() {
        if names::is_api_name(name) && taken.insert(name.clone()) {
            offered[i] = Some(name.clone());
        }
    }
    for (i, (server, t, name, _)) in wanted.iter().enumerate() {
        if offered[i].is_some() {
            continue;
        }
        let clean = names::sanitize(name);
        let mut candidate = clean.clone();
        let mut salt = 0;
        while !names::is_api_name(&candidate) || taken.contains(&candidate) {
            candidate = names::hashed(&clean, server, t, salt);
            salt += 1;
        }
        if &candidate != name {
            log::debug!("server `{server}`: tool `{t}` is offered as `{candidate}`");
        }
        taken.insert(candidate.clone());
        offered[i] = Some(candidate);
    }
    wanted
        .into_iter()
        .zip(offered)
        .filter_map(|((_, _, _, (si, ti)), name)| Some((si, ti, name?)))
        .collect()
}

/// `server<sep>tool`, with characters LLM APIs refuse in tool names (anything but ASCII
/// letters, digits, `_` and `-`) in the server name replaced by `_`.
pub(crate) fn prefixed(server: &str, tool: &str, separator: &str) -> String {
    format!("{}{separator}{tool}", names::sanitize(server))
}

/// A server's name, its tools, its client, and whether it is live (offered).
pub(crate) type ServerTools<'a> = (&'a str, Arc<[KeptTool]>, Arc<Client>, bool);

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
    pub(crate) offered: Vec<Offered>,
    /// Positions in `offered`, in the order of the offered names (which are unique): the
    /// route of a name is found by binary search, without a second copy of every name.
    by_name: Vec<usize>,
}

/// An offered tool: its name, its server and client, and the server's definition, shared with
/// the Hub's own list of that server's tools (a [`HubTool`] is made from it when asked for).
pub(crate) struct Offered {
    pub(crate) name: String,
    pub(crate) server: Arc<str>,
    list: Arc<[KeptTool]>,
    index: usize,
    client: Arc<Client>,
}

impl Offered {
    /// Where a call of this tool goes.
    pub(crate) fn route(&self) -> Route {
        Route {
            server: Arc::clone(&self.server),
            tool: self.kept().name.clone(),
            client: Arc::clone(&self.client),
        }
    }

    /// The server's definition.
    pub(crate) fn kept(&self) -> &KeptTool {
        &self.list[self.index]
    }

    /// Whether an allow-list entry names this tool (see [`HubTool::matches`]).
    pub(crate) fn matches(&self, entry: &str) -> bool {
        self.name == entry || self.kept().name == entry
    }

    pub(crate) fn to_hub_tool(&self) -> HubTool {
        HubTool {
            name: self.name.clone(),
            server: self.server.to_string(),
            tool: self.kept().tool(),
        }
    }
}

impl Registry {
    /// The tool offered as `name`.
    pub(crate) fn find(&self, name: &str) -> Option<&Offered> {
        let at = self
            .by_name
            .binary_search_by(|&i| self.offered[i].name.as_str().cmp(name))
            .ok()?;
        Some(&self.offered[self.by_name[at]])
    }

    /// Names the tools of every server given (so names stay stable while a server is degraded),
    /// then offers and routes those of the servers marked live.
    pub(crate) fn build(
        servers: &[ServerTools<'_>],
        policy: CollisionPolicy,
        separator: &str,
    ) -> Registry {
        let named: Vec<(&str, &[KeptTool])> =
            servers.iter().map(|(s, t, _, _)| (*s, &**t)).collect();
        let names: Vec<Arc<str>> = servers.iter().map(|(s, _, _, _)| Arc::from(*s)).collect();
        let assigned = assign(&named, policy, separator);
        let live = assigned.iter().filter(|(si, _, _)| servers[*si].3).count();
        let mut offered = Vec::with_capacity(live);
        for (si, ti, name) in assigned {
            let (_, list, client, live) = &servers[si];
            if !*live {
                continue;
            }
            offered.push(Offered {
                name,
                server: Arc::clone(&names[si]),
                list: Arc::clone(list),
                index: ti,
                client: Arc::clone(client),
            });
        }
        let mut by_name: Vec<usize> = (0..offered.len()).collect();
        by_name.sort_unstable_by(|&a, &b| offered[a].name.cmp(&offered[b].name));
        Registry { offered, by_name }
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
    fn a_prefixed_name_that_clashes_with_a_real_one_gets_a_hash_suffix() {
        let a = tools(&["echo", "b__echo"]);
        let b = tools(&["echo"]);
        let got = assign_names(
            &[("a", &a), ("b", &b)],
            CollisionPolicy::PrefixColliding,
            "__",
        );
        let hashed = names::hashed("b__echo", "b", "echo", 0);
        assert_eq!(
            names(&got),
            [
                n("a__echo", "a", "echo"),
                n("b__echo", "a", "b__echo"),
                n(&hashed, "b", "echo")
            ]
        );
    }

    #[test]
    fn names_the_apis_refuse_are_mapped_and_long_prefixes_shortened() {
        let long_tool = "t".repeat(70);
        let a = tools(&["files.read", &long_tool, "echo"]);
        let s1 = "s".repeat(60);
        let s2 = format!("{}x", "s".repeat(59));
        let got = assign_names(
            &[
                ("a", &a),
                (&s1, &tools(&["echo"])),
                (&s2, &tools(&["echo"])),
            ],
            CollisionPolicy::PrefixColliding,
            "__",
        );
        let offered: Vec<&str> = got.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(offered[0], "files_read");
        assert!(offered.iter().all(|n| names::is_api_name(n)), "{offered:?}");
        let unique: HashSet<&&str> = offered.iter().collect();
        assert_eq!(unique.len(), offered.len());
        // The two 60-character servers' `echo` differ although their first 55 characters agree.
        assert_eq!(
            (got[3].server.as_str(), got[4].server.as_str()),
            (s1.as_str(), s2.as_str())
        );
        assert_ne!(got[3].name, got[4].name);
        assert!(got[3].name.starts_with("sss") && got[3].name.len() == 64);
    }

    #[test]
    fn a_sanitised_name_does_not_take_a_real_one() {
        // `files_read` is offered verbatim by b, even though a's `files.read` comes first.
        let a = tools(&["files.read"]);
        let b = tools(&["files_read"]);
        let got = assign_names(
            &[("a", &a), ("b", &b)],
            CollisionPolicy::PrefixColliding,
            "__",
        );
        assert_eq!(got[1].name, "files_read");
        assert_eq!(
            got[0].name,
            names::hashed("files_read", "a", "files.read", 0)
        );
    }

    /// Generated tool names (1–128 characters: ASCII, dots, spaces, unicode) on generated server
    /// names: every offered name matches the API rule, names are unique, every tool is offered
    /// once and routes back to its server and own name, and naming again gives the same names.
    #[test]
    fn generated_names_are_valid_unique_stable_and_route_back() {
        use crate::test_rng::{cases, seed, Rng};
        const ALPHABET: &[char] = &[
            'a', 'b', 'Z', '0', '9', '_', '-', '.', ' ', '/', ':', 'é', 'ß', '中', '🙂', '\u{0}',
        ];
        let start = seed(0x6e61_6d65);
        for case in 0..cases(300) {
            let mut rng = Rng::new(start.wrapping_add(case));
            let text = |rng: &mut Rng, min: usize, max: usize| -> String {
                let len = min + rng.below(max - min + 1);
                // Few letters, so names collide often.
                (0..len).map(|_| *rng.pick(ALPHABET)).collect()
            };
            let n_servers = 1 + rng.below(4);
            let mut servers: Vec<(String, Vec<Tool>)> = Vec::new();
            for s in 0..n_servers {
                let name = if rng.chance(50) {
                    format!("s{s}")
                } else {
                    format!("{}{s}", text(&mut rng, 0, 70))
                };
                let n_tools = rng.below(6);
                let mut ts: Vec<String> = (0..n_tools)
                    .map(|_| {
                        if rng.chance(30) {
                            text(&mut rng, 1, 3)
                        } else {
                            text(&mut rng, 1, 128)
                        }
                    })
                    .collect();
                if rng.chance(30) {
                    ts.push("echo".into());
                }
                ts.sort();
                ts.dedup();
                servers.push((
                    name,
                    ts.iter().map(|n| Tool::new(n.clone(), json!({}))).collect(),
                ));
            }
            let policy = *rng.pick(&[
                CollisionPolicy::PrefixColliding,
                CollisionPolicy::PrefixAll,
                CollisionPolicy::FirstWins,
            ]);
            let refs: Vec<(&str, &[Tool])> = servers
                .iter()
                .map(|(s, t)| (s.as_str(), t.as_slice()))
                .collect();
            let got = assign_names(&refs, policy, "__");
            let ctx = format!("seed {start:#x} case {case}: {servers:?}");
            // FirstWins leaves out the later servers' tools of a name already offered.
            let total: usize = if policy == CollisionPolicy::FirstWins {
                let mut names = HashSet::new();
                servers
                    .iter()
                    .flat_map(|(_, t)| t)
                    .filter(|t| names.insert(t.name.clone()))
                    .count()
            } else {
                servers.iter().map(|(_, t)| t.len()).sum()
            };
            assert_eq!(got.len(), total, "{ctx}");
            let mut seen = HashSet::new();
            for t in &got {
                assert!(names::is_api_name(&t.name), "{ctx}: {:?}", t.name);
                assert!(seen.insert(t.name.clone()), "{ctx}: {:?} twice", t.name);
                assert!(
                    servers
                        .iter()
                        .any(|(s, ts)| *s == t.server && ts.iter().any(|x| x.name == t.tool.name)),
                    "{ctx}"
                );
            }
            let routed: HashSet<(&str, &str)> = got
                .iter()
                .map(|t| (t.server.as_str(), t.tool.name.as_str()))
                .collect();
            assert_eq!(routed.len(), total, "{ctx}");
            assert_eq!(assign_names(&refs, policy, "__"), got, "{ctx}: not stable");
        }
    }

    #[test]
    fn a_server_listing_a_name_twice_is_not_a_collision_with_itself() {
        let a = tools(&["echo", "echo"]);
        let got = assign_names(&[("a", &a)], CollisionPolicy::PrefixColliding, "-");
        assert_eq!(names(&got), [n("echo", "a", "echo")]);
    }

    #[test]
    fn every_offered_name_finds_its_tool_and_route() {
        let client =
            |s: &str| Arc::new(Client::builder(crate::ServerConfig::stdio(s, "x")).build());
        let a = super::super::compact::keep(&tools(&["echo", "zz", "add", "files.read"]));
        let b = super::super::compact::keep(&tools(&["echo", "search", "a"]));
        let c = super::super::compact::keep(&tools(&["hidden"]));
        let servers: Vec<ServerTools<'_>> = vec![
            ("a", a, client("a"), true),
            ("b", b, client("b"), true),
            ("c", c, client("c"), false),
        ];
        let reg = Registry::build(&servers, CollisionPolicy::PrefixColliding, "__");
        assert_eq!(reg.offered.len(), 7);
        for o in &reg.offered {
            let found = reg.find(&o.name).expect("found");
            assert!(std::ptr::eq(found, o));
            let route = found.route();
            assert_eq!(
                (&*route.server, route.tool.as_str()),
                (&*o.server, &*o.kept().name)
            );
        }
        let route = reg.find("files_read").expect("sanitised name").route();
        assert_eq!((&*route.server, route.tool.as_str()), ("a", "files.read"));
        assert!(reg.find("echo").is_none() && reg.find("hidden").is_none());
        assert!(reg.find("").is_none() && Registry::default().find("a__echo").is_none());
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

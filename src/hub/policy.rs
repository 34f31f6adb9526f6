//! The servers' policies as the Hub applies them: a tool a policy refuses is never offered
//! (each [`Client`](crate::Client) leaves it out of its list), and a call of it is refused with
//! [`Error::ToolNotAllowed`] naming its server, not answered as an unknown name.
//!
//! | where | what the Hub does |
//! |---|---|
//! | connect, `list_changed` | the client lists only the tools its policy allows |
//! | [`Hub::inject`](crate::Hub::inject) with a tool list | the list is filtered by the client's policy |
//! | a call of a name no server offers | the first server (in order) whose policy refuses it names the rule |

use crate::config::ServerConfig;
use crate::error::Error;
use crate::model::Tool;

/// `tools` without those `config`'s policy refuses.
pub(crate) fn allowed(config: &ServerConfig, tools: &[Tool]) -> Vec<Tool> {
    tools
        .iter()
        .filter(|t| config.policy().allows_tool(&t.name))
        .cloned()
        .collect()
}

/// Why a call of `name`, which no server offers, is refused: by the server whose prefix it
/// carries (`server__tool`), else by the first server whose policy refuses the name as it is.
/// `None` when no policy refuses it (then it is merely unknown).
pub(crate) fn refusal<'a>(
    servers: impl IntoIterator<Item = &'a ServerConfig>,
    name: &str,
    separator: &str,
) -> Option<Error> {
    let servers: Vec<&ServerConfig> = servers.into_iter().collect();
    let refused = |config: &ServerConfig, tool: &str| {
        config
            .policy()
            .check_tool(tool)
            .err()
            .map(|refusal| Error::ToolNotAllowed {
                server: config.name().to_owned(),
                refusal: Box::new(refusal),
            })
    };
    let prefixed = servers.iter().find_map(|c| {
        let own = name
            .strip_prefix(c.name())
            .and_then(|rest| rest.strip_prefix(separator))?;
        refused(c, own)
    });
    prefixed.or_else(|| servers.iter().find_map(|c| refused(c, name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RuleSource, ServerPolicy};
    use serde_json::json;

    fn server(name: &str, policy: ServerPolicy) -> ServerConfig {
        ServerConfig::stdio(name, "x").with_policy(policy)
    }

    fn refused_by(e: Option<Error>) -> Option<(String, String)> {
        match e? {
            Error::ToolNotAllowed { server, refusal } => Some((server, refusal.tool)),
            other => panic!("expected ToolNotAllowed, got {other:?}"),
        }
    }

    #[test]
    fn the_server_whose_policy_refuses_the_name_is_named() {
        let free = server("free", ServerPolicy::new());
        let gem = server(
            "gem",
            ServerPolicy::new()
                .exclude_tools(["crash"])
                .with_exclude_source(RuleSource::key("mcpServers.gem.excludeTools")),
        );
        let both = [free.clone(), gem.clone()];
        assert_eq!(
            refused_by(refusal(&both, "crash", "__")),
            Some(("gem".into(), "crash".into()))
        );
        // A prefixed name is the server's own tool name.
        assert_eq!(
            refused_by(refusal(&both, "gem__crash", "__")),
            Some(("gem".into(), "crash".into()))
        );
        // A name no policy refuses is merely unknown.
        assert!(refusal(&both, "nope", "__").is_none());
        assert!(refusal(&both, "free__crash", "__").is_none());
    }

    #[test]
    fn a_given_tool_list_is_filtered() {
        let gem = server("gem", ServerPolicy::new().exclude_tools(["crash"]));
        let tools = [
            Tool::new("echo", json!({"type": "object"})),
            Tool::new("crash", json!({"type": "object"})),
        ];
        let kept: Vec<String> = allowed(&gem, &tools).into_iter().map(|t| t.name).collect();
        assert_eq!(kept, ["echo"]);
    }
}

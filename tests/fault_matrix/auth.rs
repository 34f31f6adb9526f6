//! The authorization server's endpoints under the same stalls: resource metadata, its own
//! metadata, registration and token, for each grant (authorization code, client credentials,
//! workload identity's jwt-bearer, enterprise authorization with the identity provider's token
//! exchange, DPoP's token request and its retries with the servers' nonces), and the token
//! endpoint for the refresh of a stored token that expired. Each stalled request must be given
//! up within [`OAuthConfig::timeout`] (an MCP request, within the request timeout), and
//! connecting must end (recovered, or with a typed error naming the server) within it + 1 s.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mcp_blocking::auth::{
    AssertionSource, EnterpriseIdp, MemoryTokenStore, OAuthConfig, RedirectHandler, StoredTokens,
    TokenStore,
};
use mcp_blocking::config::ProtocolMode;
use mcp_blocking::{Client, Error, ServerConfig};
use serde_json::{json, Value};

use super::fault_support::endpoint::{EndpointPeer, Handler, Reply, Req};
use super::fault_support::{wire, Plan, Stall};
use super::{Outcome, LONG, NAME, SLACK, STALLS, T};

/// The endpoints of an OAuth sign-in, as the authorization peer names them, and DPoP's retries:
/// `token-nonce` is the token request sent again with the authorization server's nonce,
/// `mcp-nonce` the MCP request sent again with the resource server's.
pub(super) const AUTH_ENDPOINTS: [&str; 7] = [
    "resource-metadata",
    "as-metadata",
    "registration",
    "token",
    "idp-token",
    "token-nonce",
    "mcp-nonce",
];

/// A JWT-shaped assertion (the peer checks nothing of it).
const ASSERTION: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3In0.c2ln";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Grant {
    /// A person signs in (here a redirect handler that answers at once); the client registers.
    AuthorizationCode,
    /// Machine to machine, with a client id and secret: nothing registers.
    ClientCredentials,
    /// A stored access token that has expired: its refresh token goes to the token endpoint
    /// (a sign-in, as `AuthorizationCode`, follows a failed refresh).
    Refresh,
    /// Workload identity: the jwt-bearer grant with a given assertion; nothing registers.
    WorkloadIdentity,
    /// Enterprise-managed authorization: the ID token exchanged at the identity provider's
    /// token endpoint (`/idp/token`) for an ID-JAG, then the jwt-bearer grant.
    Enterprise,
    /// Client credentials with DPoP: the token endpoint asks for a nonce once
    /// (`use_dpop_nonce`), and so does the MCP server on the first request with the token.
    Dpop,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct AuthCell {
    grant: Grant,
    endpoint: &'static str,
    s: Stall,
}

impl AuthCell {
    pub(super) fn name(&self) -> String {
        let g = match self.grant {
            Grant::AuthorizationCode => "authorization-code",
            Grant::ClientCredentials => "client-credentials",
            Grant::Refresh => "refresh",
            Grant::WorkloadIdentity => "workload-identity",
            Grant::Enterprise => "enterprise",
            Grant::Dpop => "dpop",
        };
        format!("auth/{g}/{}/{:?}", self.endpoint, self.s).to_lowercase()
    }

    /// The request that stalls: the route's name and its occurrence (from 1). The MCP server's
    /// third POST is the retried `initialize`: the first had no token (401, the sign-in), the
    /// second was answered `use_dpop_nonce`.
    fn stall_at(&self) -> (&'static str, usize) {
        match self.endpoint {
            "token-nonce" => ("token", 2),
            "mcp-nonce" => ("mcp", 3),
            e => (e, 1),
        }
    }
}

/// The authorization cells that cannot exist, and why.
pub(super) fn auth_impossible(c: &AuthCell) -> Option<&'static str> {
    if c.endpoint == "idp-token" && c.grant != Grant::Enterprise {
        return Some("only enterprise authorization asks an identity provider");
    }
    if c.endpoint.ends_with("-nonce") && c.grant != Grant::Dpop {
        return Some("only DPoP asks for a nonce");
    }
    if c.grant == Grant::Dpop && c.endpoint.ends_with("metadata") {
        return Some(
            "DPoP's discovery is client credentials' (the same requests, with no proof): \
             those cells cover it",
        );
    }
    if c.endpoint == "registration"
        && matches!(
            c.grant,
            Grant::ClientCredentials | Grant::WorkloadIdentity | Grant::Enterprise | Grant::Dpop
        )
    {
        return Some(
            "a client of a grant no person takes part in is set beforehand: nothing registers",
        );
    }
    (c.grant == Grant::Refresh && c.endpoint != "token").then_some(
        "a refresh goes straight to the stored token endpoint: the stalls of discovery and \
         registration are the sign-in's",
    )
}

pub(super) fn auth_route(req: &Req) -> Option<&'static str> {
    let p = req.path.as_str();
    if p.starts_with("/.well-known/oauth-protected-resource") {
        Some("resource-metadata")
    } else if p.starts_with("/.well-known/oauth-authorization-server")
        || p.starts_with("/.well-known/openid-configuration")
    {
        Some("as-metadata")
    } else if p.starts_with("/register") {
        Some("registration")
    } else if p.starts_with("/idp/token") {
        Some("idp-token")
    } else if p.starts_with("/token") {
        Some("token")
    } else if req.method == "POST" && p.starts_with("/mcp") {
        Some("mcp")
    } else {
        None
    }
}

/// A protected MCP server and its authorization server on one origin; with `dpop`, the token
/// endpoint asks once for a nonce before it issues a `DPoP` token, and the MCP server asks once
/// for its own before it takes that token.
pub(super) fn auth_handler(dpop: bool) -> Handler {
    let token_requests = AtomicUsize::new(0);
    let mcp_with_token = AtomicUsize::new(0);
    Arc::new(move |req: &Req, origin: &str| {
        let path = req.path.split('?').next().unwrap_or("");
        match (req.method.as_str(), auth_route(req)) {
            ("GET", Some("resource-metadata")) => Reply::json(
                "200 OK",
                &json!({"resource": format!("{origin}/mcp"), "authorization_servers": [origin]}),
            ),
            ("GET", Some("as-metadata")) => Reply::json(
                "200 OK",
                &json!({
                    "issuer": origin,
                    "authorization_endpoint": format!("{origin}/authorize"),
                    "token_endpoint": format!("{origin}/token"),
                    "registration_endpoint": format!("{origin}/register"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported":
                        ["none", "client_secret_basic", "client_secret_post"]
                }),
            ),
            ("POST", Some("registration")) => Reply::json(
                "201 Created",
                &json!({"client_id": "client-1", "token_endpoint_auth_method": "none",
                        "redirect_uris": ["http://localhost:3000/callback"]}),
            ),
            ("POST", Some("idp-token")) => Reply::json(
                "200 OK",
                &json!({"access_token": ASSERTION,
                        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                        "token_type": "N_A"}),
            ),
            ("POST", Some("token"))
                if dpop && token_requests.fetch_add(1, Ordering::SeqCst) == 0 =>
            {
                Reply {
                    status: "400 Bad Request",
                    headers: vec![
                        ("Content-Type", "application/json".into()),
                        ("DPoP-Nonce", "as-nonce-1".into()),
                    ],
                    body: br#"{"error":"use_dpop_nonce"}"#.to_vec(),
                }
            }
            ("POST", Some("token")) => Reply::json(
                "200 OK",
                &json!({"access_token": "tok-1",
                        "token_type": if dpop { "DPoP" } else { "Bearer" },
                        "expires_in": 3600}),
            ),
            ("POST", _) if path == "/mcp" => {
                let token = if dpop { "DPoP tok-1" } else { "Bearer tok-1" };
                if req.header("authorization") == Some(token) {
                    if dpop && mcp_with_token.fetch_add(1, Ordering::SeqCst) == 0 {
                        return Reply {
                            status: "401 Unauthorized",
                            headers: vec![
                                ("WWW-Authenticate", r#"DPoP error="use_dpop_nonce""#.into()),
                                ("DPoP-Nonce", "rs-nonce-1".into()),
                            ],
                            body: b"use_dpop_nonce".to_vec(),
                        };
                    }
                    mcp_reply(req)
                } else {
                    Reply {
                        status: "401 Unauthorized",
                        headers: vec![(
                            "WWW-Authenticate",
                            format!(
                                "Bearer resource_metadata=\"{origin}/.well-known/\
                                 oauth-protected-resource/mcp\""
                            ),
                        )],
                        body: b"unauthorized".to_vec(),
                    }
                }
            }
            ("DELETE", _) => Reply::json("200 OK", &json!({})),
            _ => Reply {
                status: "405 Method Not Allowed",
                headers: Vec::new(),
                body: Vec::new(),
            },
        }
    })
}

/// The protected server's answers, once the token is there.
pub(super) fn mcp_reply(req: &Req) -> Reply {
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let Some(id) = msg.get("id") else {
        return Reply {
            status: "202 Accepted",
            headers: Vec::new(),
            body: Vec::new(),
        };
    };
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({"protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "guarded", "version": "1"}}),
        "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        _ => json!({}),
    };
    Reply::json(
        "200 OK",
        &json!({"jsonrpc": "2.0", "id": id, "result": result}),
    )
}

/// The redirect handler of a person who signs in at once: the callback with a code and the
/// state the authorization address carries.
pub(super) fn signed_in(url: &str) -> Result<String, String> {
    let state = url
        .split_once('?')
        .map(|(_, q)| q)
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("state="))
        .ok_or("no state")?;
    Ok(format!(
        "http://localhost:3000/callback?code=c0de&state={state}"
    ))
}

pub(super) fn run_auth_cell(cell: &AuthCell) -> Outcome {
    let mut plan = Plan::new(cell.stall_at(), cell.s);
    plan.close_each = false;
    let peer = EndpointPeer::start(plan, auth_route, auth_handler(cell.grant == Grant::Dpop));
    let oauth = match cell.grant {
        Grant::AuthorizationCode => OAuthConfig::authorization_code(RedirectHandler::custom(
            "http://localhost:3000/callback",
            signed_in,
        )),
        Grant::ClientCredentials => OAuthConfig::client_credentials("svc", "s3cret"),
        Grant::Refresh => OAuthConfig::authorization_code(RedirectHandler::custom(
            "http://localhost:3000/callback",
            signed_in,
        ))
        .token_store(expired_tokens(&peer.origin())),
        Grant::WorkloadIdentity => {
            OAuthConfig::workload_identity(AssertionSource::value(ASSERTION))
        }
        Grant::Enterprise => OAuthConfig::enterprise(
            EnterpriseIdp::new(format!("{}/idp", peer.origin()), "idp-client")
                .token_endpoint(format!("{}/idp/token", peer.origin()))
                .id_token(AssertionSource::value(ASSERTION)),
        )
        .client_id("svc")
        .client_secret("s3cret"),
        Grant::Dpop => OAuthConfig::client_credentials("svc", "s3cret").dpop(true),
    }
    .timeout(T);
    // An MCP request is bounded by the request timeout, the authorization's requests by
    // `OAuthConfig::timeout`: the cell gives the one it stalls `T`, the other `LONG`.
    let request_timeout = if cell.endpoint == "mcp-nonce" {
        T
    } else {
        LONG
    };
    let cfg = ServerConfig::http(NAME, format!("{}/mcp", peer.origin()))
        .with_timeout(request_timeout)
        .with_protocol(ProtocolMode::Legacy)
        .with_oauth(oauth);
    let started = Instant::now();
    let r = Client::connect(cfg);
    let took = started.elapsed();
    let shared = peer.shared.clone();
    let outcome = (|| {
        let Some(stalled) = shared.stalled_at() else {
            return Err(format!("the sign-in never reached `{}`", cell.endpoint));
        };
        // The stalled request is given up within the authorization timeout.
        let abandoned = wire::wait(T + SLACK, &mut || peer.abandoned_at().is_some());
        if !abandoned {
            return Err(format!(
                "the stalled request was still open {:?} after it began",
                stalled.elapsed()
            ));
        }
        let gave_up = peer.abandoned_at().map(|a| a - stalled).unwrap_or_default();
        if took > T + SLACK {
            return Err(format!(
                "connecting took {took:?}, more than {:?}",
                T + SLACK
            ));
        }
        match &r {
            Ok(c) => {
                // Recovered (another well-known address, or a second try): it must work.
                c.list_tools()
                    .map_err(|e| format!("recovered, then not usable: {e}"))?;
            }
            Err(e @ (Error::Connect(_) | Error::Timeout { .. } | Error::Unauthorized { .. }))
                if e.to_string().contains(NAME) => {}
            Err(e) => return Err(format!("not a typed error naming the server: {e:?}")),
        }
        Ok(gave_up)
    })();
    if let Ok(c) = r {
        let _ = c.close();
    }
    let left = wire::wait(SLACK, &mut || shared.open_connections() == 0);
    drop(peer);
    match (outcome, left) {
        (Ok(d), true) => Ok(d),
        (Ok(_), false) => Err("a connection to the authorization server is still open".into()),
        (Err(e), _) => Err(e),
    }
}

/// A store holding an access token for the peer's MCP server that expired long ago, and its
/// refresh token.
fn expired_tokens(origin: &str) -> MemoryTokenStore {
    let store = MemoryTokenStore::new();
    let tokens: StoredTokens = serde_json::from_value(json!({
        "issuer": origin,
        "resource": format!("{origin}/mcp"),
        "client_id": "client-1",
        "token_endpoint_auth_method": "none",
        "token_endpoint": format!("{origin}/token"),
        "access_token": "tok-old",
        "refresh_token": "rt-1",
        "expires_at": 1,
    }))
    .expect("stored tokens");
    store.save(&tokens).expect("save");
    store
}

pub(super) fn auth_cells() -> Vec<AuthCell> {
    let mut cells = Vec::new();
    for grant in [
        Grant::AuthorizationCode,
        Grant::ClientCredentials,
        Grant::Refresh,
        Grant::WorkloadIdentity,
        Grant::Enterprise,
        Grant::Dpop,
    ] {
        for endpoint in AUTH_ENDPOINTS {
            for s in STALLS {
                cells.push(AuthCell { grant, endpoint, s });
            }
        }
    }
    cells
}

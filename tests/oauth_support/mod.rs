//! A loopback OAuth-protected MCP server of our own: one origin serving the protected resource
//! (`/mcp`, Streamable HTTP with JSON replies), its metadata (RFC 9728), the authorization
//! server's metadata (RFC 8414), dynamic registration, an auto-approving `/authorize` and a
//! `/token` endpoint with PKCE S256 checks, refresh tokens and switches for misbehaviour.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::support_remote::{result, Conn, HttpServer, Req};

/// How the authorization server behaves.
#[derive(Clone)]
pub struct AsOptions {
    /// List `S256` in `code_challenge_methods_supported` (else only `plain`).
    pub s256: bool,
    /// Send this `iss` on the redirect instead of the issuer.
    pub wrong_iss: Option<String>,
    /// `expires_in` of access tokens.
    pub expires_in: u64,
    /// Issue refresh tokens.
    pub refresh: bool,
    /// Answer every refresh with `invalid_grant`.
    pub reject_refresh: bool,
    /// The `resource_metadata` URL the 401 challenge names (default: this origin's path-aware
    /// well-known URL).
    pub resource_metadata: Option<String>,
    /// The `scope` the 401 challenge names.
    pub challenge_scope: Option<String>,
    /// Answer every request with a valid token 403 `insufficient_scope`, asking for this scope.
    pub forbid_scope: Option<String>,
    /// Give each registration its own client id (`client-<n>`) and answer `invalid_client` at
    /// the token endpoint for an id it did not register (or has forgotten).
    pub check_clients: bool,
    /// Answer every token request `invalid_client`.
    pub reject_clients: bool,
    /// Pad the authorization server metadata with this many bytes.
    pub metadata_padding: usize,
    /// The authorization server metadata's `scopes_supported` (none when `None`).
    pub as_scopes: Option<Vec<String>>,
    /// Replace these endpoints in the authorization server metadata (`"token_endpoint"` ->
    /// URL).
    pub endpoints: Vec<(String, String)>,
    /// The authorization server's issuer, instead of the origin: named by the protected
    /// resource metadata, stated by its metadata (whose endpoints it prefixes) and sent as
    /// `iss` (a name for this same server, such as one only a test proxy resolves).
    pub issuer: Option<String>,
    /// `GET /.well-known/oauth-authorization-server` answers 307 to this `Location` (a path on
    /// this origin serves the metadata at `/as-metadata`).
    pub metadata_redirect: Option<String>,
    /// `POST /token` answers this redirect status and `Location` (`POST /token2` is the token
    /// endpoint too).
    pub token_redirect: Option<(u16, String)>,
    /// The `resource` the protected resource metadata of `/mcp` states (default: the URL of
    /// `/mcp`).
    pub prm_resource: Option<String>,
    /// `/mcp` quotes the request's `Authorization` and `DPoP` headers back: `tools/call` of
    /// `leak_http`
    /// in an HTTP 500 body, of `leak_rpc` in a JSON-RPC error message.
    pub echo_authorization: bool,
    /// `/token` never answers (it waits for the client to hang up).
    pub stall_token: bool,
    /// No `/.well-known/` address answers (each waits for the client to hang up).
    pub stall_metadata: bool,
    /// A refresh is refused with an `error_description` quoting the refresh token sent.
    pub echo_refresh: bool,
    /// A `client_credentials` grant is refused with an `error_description` quoting the client
    /// secret its Basic `Authorization` header carries.
    pub echo_client_secret: bool,
    /// DPoP (RFC 9449): list ES256 in `dpop_signing_alg_values_supported`; a token request
    /// with a `DPoP` proof whose `nonce` is not this one is answered 400 `use_dpop_nonce` with
    /// a `DPoP-Nonce` header naming it (a proof with it gets a `DPoP` token).
    pub dpop_nonce: Option<String>,
    /// The MCP endpoint asks for this DPoP nonce: a request with a `DPoP` token whose proof
    /// does not carry it is answered 401 `DPoP error="use_dpop_nonce"` with a `DPoP-Nonce`
    /// header naming it.
    pub rs_dpop_nonce: Option<String>,
    /// With `rs_dpop_nonce`: every request with a `DPoP` token is answered `use_dpop_nonce`,
    /// with a new nonce each time (a server no proof satisfies).
    pub rs_nonce_never_accepted: bool,
    /// The MCP endpoint's 401 challenge names the `DPoP` scheme instead of `Bearer`.
    pub dpop_challenge: bool,
    /// The protected resource metadata says `dpop_bound_access_tokens_required: true`.
    pub prm_requires_dpop: bool,
    /// The metadata's `token_endpoint_auth_methods_supported` (default `["none"]`).
    pub auth_methods: Option<Vec<String>>,
    /// A `jwt-bearer` grant (RFC 7523) is answered 400 with this OAuth error (else a token).
    pub jwt_bearer_error: Option<String>,
    /// A `jwt-bearer` grant must carry this client's `Basic` authentication (id, secret), else
    /// it is answered 401 `invalid_client`.
    pub jwt_bearer_client: Option<(String, String)>,
    /// A refused `jwt-bearer` grant's `error_description` quotes the assertion sent.
    pub echo_assertion: bool,
    /// The enterprise identity provider at `<origin>/idp` answers a token exchange 400 with
    /// this OAuth error (else an ID-JAG).
    pub idp_error: Option<String>,
    /// The `issued_token_type` of the identity provider's exchange answer (default the ID-JAG
    /// type).
    pub idp_issued_type: Option<String>,
    /// A refused exchange's `error_description` quotes the subject token sent.
    pub idp_echo_subject: bool,
}

impl Default for AsOptions {
    fn default() -> Self {
        AsOptions {
            s256: true,
            wrong_iss: None,
            expires_in: 3600,
            refresh: true,
            reject_refresh: false,
            resource_metadata: None,
            challenge_scope: None,
            forbid_scope: None,
            check_clients: false,
            reject_clients: false,
            metadata_padding: 0,
            as_scopes: None,
            endpoints: Vec::new(),
            issuer: None,
            metadata_redirect: None,
            token_redirect: None,
            prm_resource: None,
            echo_authorization: false,
            stall_token: false,
            stall_metadata: false,
            echo_refresh: false,
            echo_client_secret: false,
            dpop_nonce: None,
            rs_dpop_nonce: None,
            rs_nonce_never_accepted: false,
            dpop_challenge: false,
            prm_requires_dpop: false,
            auth_methods: None,
            jwt_bearer_error: None,
            jwt_bearer_client: None,
            echo_assertion: false,
            idp_error: None,
            idp_issued_type: None,
            idp_echo_subject: false,
        }
    }
}

/// What the server saw and holds.
pub struct AsState {
    /// Answers for the legacy SSE stream.
    sse_tx: crossbeam_channel::Sender<Value>,
    sse_rx: crossbeam_channel::Receiver<Value>,
    /// Valid access tokens.
    pub access: Mutex<Vec<String>>,
    /// Valid refresh tokens.
    pub refresh: Mutex<Vec<String>>,
    /// Code -> (code_challenge, redirect_uri).
    codes: Mutex<HashMap<String, (String, String)>>,
    pub authorize_requests: AtomicUsize,
    pub code_grants: AtomicUsize,
    pub refresh_grants: AtomicUsize,
    pub registrations: AtomicUsize,
    /// `client_credentials` grants for client `m2m` (secret `m2m-secret`, Basic auth).
    pub client_credentials_grants: AtomicUsize,
    pub unauthorized: AtomicUsize,
    /// The `redirect_uri` of the last authorization request.
    pub last_redirect_uri: Mutex<Option<String>>,
    /// The `scope` of each authorization request (`None`: none sent).
    pub scopes: Mutex<Vec<Option<String>>>,
    /// The client ids registered (with `check_clients`).
    pub clients: Mutex<Vec<String>>,
    /// The client id of each token request.
    pub token_clients: Mutex<Vec<String>>,
    /// `jwt-bearer` grants answered with a token.
    pub jwt_bearer_grants: AtomicUsize,
    /// The ID-JAGs the identity provider issued, in order.
    pub id_jags: Mutex<Vec<String>>,
    /// The ID tokens the identity provider issued on sign-in, in order.
    pub id_tokens: Mutex<Vec<String>>,
    counter: AtomicU64,
}

impl Default for AsState {
    fn default() -> Self {
        let (sse_tx, sse_rx) = crossbeam_channel::unbounded();
        AsState {
            sse_tx,
            sse_rx,
            access: Mutex::default(),
            refresh: Mutex::default(),
            codes: Mutex::default(),
            authorize_requests: AtomicUsize::default(),
            code_grants: AtomicUsize::default(),
            refresh_grants: AtomicUsize::default(),
            registrations: AtomicUsize::default(),
            client_credentials_grants: AtomicUsize::default(),
            unauthorized: AtomicUsize::default(),
            last_redirect_uri: Mutex::default(),
            scopes: Mutex::default(),
            clients: Mutex::default(),
            token_clients: Mutex::default(),
            jwt_bearer_grants: AtomicUsize::default(),
            id_jags: Mutex::default(),
            id_tokens: Mutex::default(),
            counter: AtomicU64::default(),
        }
    }
}

impl AsState {
    fn next(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.counter.fetch_add(1, Ordering::SeqCst))
    }

    /// Makes every access token issued so far invalid (the next request gets 401).
    pub fn revoke_access_tokens(&self) {
        self.access.lock().unwrap().clear();
    }

    /// Forgets every registered client (their token requests then get `invalid_client`).
    pub fn forget_clients(&self) {
        self.clients.lock().unwrap().clear();
    }
}

/// The server and its state.
pub struct AuthServer {
    pub http: HttpServer,
    pub state: Arc<AsState>,
    origin: Arc<OnceLock<String>>,
}

impl AuthServer {
    pub fn start(opts: AsOptions) -> AuthServer {
        AuthServer::start_with(|_| opts)
    }

    /// Starts with the options `opts` makes of the server's origin.
    pub fn start_with(opts: impl FnOnce(&str) -> AsOptions) -> AuthServer {
        let state = Arc::new(AsState::default());
        let origin = Arc::new(OnceLock::<String>::new());
        let options = Arc::new(OnceLock::<AsOptions>::new());
        let http = {
            let (state, origin, options) = (state.clone(), origin.clone(), options.clone());
            HttpServer::start(move |req, conn| {
                let o = origin.get().cloned().unwrap_or_default();
                let opts = options.get().cloned().unwrap_or_default();
                handle(&opts, &state, &o, req, conn)
            })
        };
        let o = http.url("").trim_end_matches('/').to_owned();
        let _ = options.set(opts(&o));
        let _ = origin.set(o);
        AuthServer {
            http,
            state,
            origin,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> String {
        self.origin.get().cloned().unwrap_or_default()
    }

    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.origin())
    }

    /// The requests whose path starts with `prefix`.
    pub fn requests_to(&self, prefix: &str) -> Vec<Req> {
        self.http
            .requests()
            .into_iter()
            .filter(|r| r.path.starts_with(prefix))
            .collect()
    }
}

/// The fields of a form-encoded request body.
pub fn form_of(req: &Req) -> HashMap<String, String> {
    form(&req.body)
}

/// The `Basic` value for `id` and `secret` (RFC 6749 §2.3.1 encoding).
pub fn basic(id: &str, secret: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", enc(id), enc(secret)))
    )
}

/// An unsigned-looking compact JWT (`header.claims.signature`) with these claims: the shape
/// the client checks; no one here verifies signatures.
pub fn fake_jwt(claims: &Value) -> String {
    let b = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    format!(
        "{}.{}.{}",
        b(br#"{"alg":"ES256","typ":"JWT"}"#),
        b(claims.to_string().as_bytes()),
        b(b"not-a-real-signature")
    )
}

fn form(body: &[u8]) -> HashMap<String, String> {
    let text = String::from_utf8_lossy(body);
    text.split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap_or(b'?'));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query(path: &str) -> HashMap<String, String> {
    path.split_once('?')
        .map(|(_, q)| form(q.as_bytes()))
        .unwrap_or_default()
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

fn handle(opts: &AsOptions, st: &AsState, origin: &str, req: &Req, conn: &mut Conn) {
    let path = req.path.split('?').next().unwrap_or("");
    match (req.method.as_str(), path) {
        ("GET", p) if opts.stall_metadata && p.starts_with("/.well-known/") => {
            conn.wait_for_peer_close()
        }
        ("GET", "/.well-known/oauth-protected-resource/mcp") => {
            let mut prm = json!({
                "resource": opts.prm_resource.clone().unwrap_or_else(|| format!("{origin}/mcp")),
                "authorization_servers": [opts.issuer.as_deref().unwrap_or(origin)],
                "scopes_supported": ["mcp:read"],
            });
            if opts.prm_requires_dpop {
                prm["dpop_bound_access_tokens_required"] = json!(true);
            }
            conn.json(200, &[], &prm)
        }
        ("GET", "/.well-known/oauth-protected-resource/sse") => conn.json(
            200,
            &[],
            &json!({"resource": format!("{origin}/sse"), "authorization_servers": [origin]}),
        ),
        ("GET", "/sse") => legacy_stream(opts, st, origin, req, conn),
        ("POST", "/messages") => {
            if refuse(opts, st, origin, "sse", req, conn) {
                return;
            }
            conn.accepted();
            if let Some(answer) = answer(&req.json()) {
                let _ = st.sse_tx.send(answer);
            }
        }
        ("GET", "/.well-known/oauth-authorization-server") if opts.metadata_redirect.is_some() => {
            conn.redirect(307, opts.metadata_redirect.as_deref().unwrap_or(""))
        }
        ("GET", "/.well-known/oauth-authorization-server") | ("GET", "/as-metadata") => {
            conn.json(200, &[], &as_metadata(opts, origin))
        }
        ("POST", "/register") => {
            let n = st.registrations.fetch_add(1, Ordering::SeqCst) + 1;
            let id = if opts.check_clients {
                format!("client-{n}")
            } else {
                "client-1".to_owned()
            };
            st.clients.lock().unwrap().push(id.clone());
            conn.json(
                201,
                &[],
                &json!({"client_id": id, "token_endpoint_auth_method": "none"}),
            )
        }
        ("GET", "/authorize") => {
            st.authorize_requests.fetch_add(1, Ordering::SeqCst);
            let q = query(&req.path);
            st.scopes.lock().unwrap().push(q.get("scope").cloned());
            let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
            *st.last_redirect_uri.lock().unwrap() = Some(redirect.clone());
            let code = st.next("code");
            st.codes.lock().unwrap().insert(
                code.clone(),
                (
                    q.get("code_challenge").cloned().unwrap_or_default(),
                    redirect.clone(),
                ),
            );
            let iss = opts
                .wrong_iss
                .clone()
                .or_else(|| opts.issuer.clone())
                .unwrap_or_else(|| origin.to_owned());
            let location = format!(
                "{redirect}?code={}&state={}&iss={}",
                enc(&code),
                enc(q.get("state").map(String::as_str).unwrap_or("")),
                enc(&iss)
            );
            conn.redirect(302, &location)
        }
        ("POST", "/token") if opts.stall_token => conn.wait_for_peer_close(),
        ("POST", "/token") if opts.token_redirect.is_some() => {
            let (status, location) = opts.token_redirect.clone().unwrap_or_default();
            conn.redirect(status, &location)
        }
        ("POST", "/token") | ("POST", "/token2") => token(opts, st, req, conn),
        ("GET", "/idp/.well-known/openid-configuration") => conn.json(
            200,
            &[],
            &json!({
                "issuer": format!("{origin}/idp"),
                "authorization_endpoint": format!("{origin}/idp/authorize"),
                "token_endpoint": format!("{origin}/idp/token"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "urn:ietf:params:oauth:grant-type:token-exchange"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                "authorization_response_iss_parameter_supported": true,
            }),
        ),
        ("GET", "/idp/authorize") => {
            let q = query(&req.path);
            let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
            let code = st.next("idp-code");
            st.codes.lock().unwrap().insert(
                code.clone(),
                (
                    q.get("code_challenge").cloned().unwrap_or_default(),
                    redirect.clone(),
                ),
            );
            let location = format!(
                "{redirect}?code={}&state={}&iss={}",
                enc(&code),
                enc(q.get("state").map(String::as_str).unwrap_or("")),
                enc(&format!("{origin}/idp"))
            );
            conn.redirect(302, &location)
        }
        ("POST", "/idp/token") => idp_token(opts, st, origin, req, conn),
        ("POST", "/mcp") => mcp(opts, st, origin, req, conn),
        ("DELETE", "/mcp") => conn.respond(200, &[], b""),
        _ => conn.respond(if path == "/mcp" { 405 } else { 404 }, &[], b""),
    }
}

/// The authorization server metadata.
fn as_metadata(opts: &AsOptions, origin: &str) -> Value {
    let origin = opts.issuer.as_deref().unwrap_or(origin);
    let methods = opts
        .auth_methods
        .clone()
        .unwrap_or_else(|| vec!["none".to_owned()]);
    let mut m = json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "registration_endpoint": format!("{origin}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", JWT_BEARER],
        "code_challenge_methods_supported": if opts.s256 { json!(["S256"]) } else { json!(["plain"]) },
        "token_endpoint_auth_methods_supported": methods,
        "authorization_response_iss_parameter_supported": true,
    });
    for (k, v) in &opts.endpoints {
        m[k.as_str()] = json!(v);
    }
    if let Some(scopes) = &opts.as_scopes {
        m["scopes_supported"] = json!(scopes);
    }
    if opts.dpop_nonce.is_some() {
        m["dpop_signing_alg_values_supported"] = json!(["ES256"]);
    }
    if opts.metadata_padding > 0 {
        m["padding"] = json!("x".repeat(opts.metadata_padding));
    }
    m
}

/// The claims of a DPoP proof, unverified (`null` when it is not a JWS).
pub fn proof_claims(proof: &str) -> Value {
    let claims = proof.split('.').nth(1).unwrap_or_default();
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(claims)
        .unwrap_or_default();
    serde_json::from_slice(&claims).unwrap_or_default()
}

fn token(opts: &AsOptions, st: &AsState, req: &Req, conn: &mut Conn) {
    let f = form(&req.body);
    if f.get("grant_type").map(String::as_str) != Some("client_credentials") {
        let id = f.get("client_id").cloned().unwrap_or_default();
        st.token_clients.lock().unwrap().push(id.clone());
        if opts.reject_clients || (opts.check_clients && !st.clients.lock().unwrap().contains(&id))
        {
            return conn.json(
                401,
                &[],
                &json!({"error": "invalid_client", "error_description": "unknown client"}),
            );
        }
    }
    // The proof's claims (the signature is the client's unit tests' concern).
    let proof_nonce = req
        .header("DPoP")
        .map(|p| proof_claims(p)["nonce"].as_str().map(str::to_owned));
    if let (Some(want), Some(got)) = (&opts.dpop_nonce, &proof_nonce) {
        if got.as_deref() != Some(want.as_str()) {
            return conn.json(
                400,
                &[("DPoP-Nonce", want.as_str())],
                &json!({"error": "use_dpop_nonce", "error_description": "a nonce is required"}),
            );
        }
    }
    let token_type = if proof_nonce.is_some() && opts.dpop_nonce.is_some() {
        "DPoP"
    } else {
        "Bearer"
    };
    let issue = |conn: &mut Conn| {
        let access = st.next("at");
        st.access.lock().unwrap().push(access.clone());
        let mut body = json!({
            "access_token": access,
            "token_type": token_type,
            "expires_in": opts.expires_in,
            "scope": "mcp:read",
        });
        if opts.refresh {
            let r = st.next("rt");
            st.refresh.lock().unwrap().push(r.clone());
            body["refresh_token"] = json!(r);
        }
        conn.json(200, &[("Cache-Control", "no-store")], &body)
    };
    let bad = |conn: &mut Conn, what: &str| {
        conn.json(
            400,
            &[],
            &json!({"error": "invalid_grant", "error_description": what}),
        )
    };
    match f.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let code = f.get("code").cloned().unwrap_or_default();
            let Some((challenge, redirect)) = st.codes.lock().unwrap().remove(&code) else {
                return bad(conn, "unknown code");
            };
            let verifier = f.get("code_verifier").cloned().unwrap_or_default();
            if s256(&verifier) != challenge {
                return bad(conn, "PKCE verification failed");
            }
            if f.get("redirect_uri") != Some(&redirect) || !f.contains_key("resource") {
                return bad(conn, "redirect_uri or resource");
            }
            st.code_grants.fetch_add(1, Ordering::SeqCst);
            issue(conn)
        }
        Some("refresh_token") => {
            st.refresh_grants.fetch_add(1, Ordering::SeqCst);
            let r = f.get("refresh_token").cloned().unwrap_or_default();
            let known = {
                let mut list = st.refresh.lock().unwrap();
                let had = list.contains(&r);
                list.retain(|x| *x != r);
                had
            };
            if opts.echo_refresh {
                return bad(conn, &format!("refresh token {r} rejected"));
            }
            if opts.reject_refresh || !known {
                return bad(conn, "refresh token rejected");
            }
            issue(conn)
        }
        Some(JWT_BEARER) => {
            if let Some((id, secret)) = &opts.jwt_bearer_client {
                if req.header("authorization") != Some(basic(id, secret).as_str()) {
                    return conn.json(401, &[], &json!({"error": "invalid_client"}));
                }
            }
            if let Some(error) = &opts.jwt_bearer_error {
                let description = if opts.echo_assertion {
                    format!(
                        "assertion {} rejected",
                        f.get("assertion").map(String::as_str).unwrap_or("")
                    )
                } else {
                    "assertion rejected".to_owned()
                };
                return conn.json(
                    400,
                    &[],
                    &json!({"error": error, "error_description": description}),
                );
            }
            st.jwt_bearer_grants.fetch_add(1, Ordering::SeqCst);
            issue(conn)
        }
        Some("client_credentials") => {
            let want = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("m2m:m2m-secret")
            );
            if opts.echo_client_secret {
                let sent = req
                    .header("authorization")
                    .and_then(|v| v.strip_prefix("Basic "))
                    .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                    .map(|d| String::from_utf8_lossy(&d).into_owned())
                    .unwrap_or_default();
                let secret = sent.split_once(':').map_or("", |(_, s)| s);
                return conn.json(
                    401,
                    &[],
                    &json!({
                        "error": "invalid_client",
                        "error_description": format!("client secret {secret} rejected"),
                    }),
                );
            }
            if req.header("authorization") != Some(want.as_str()) {
                return conn.json(401, &[], &json!({"error": "invalid_client"}));
            }
            st.client_credentials_grants.fetch_add(1, Ordering::SeqCst);
            issue(conn)
        }
        _ => conn.json(400, &[], &json!({"error": "unsupported_grant_type"})),
    }
}

/// The RFC 7523 grant type.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The RFC 8693 grant type.
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The SEP-990 token type of an ID-JAG.
pub const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// The enterprise identity provider's token endpoint: token exchange (an ID-JAG for any
/// subject token) and the authorization code of a sign-in (an ID token valid for an hour).
fn idp_token(opts: &AsOptions, st: &AsState, origin: &str, req: &Req, conn: &mut Conn) {
    let f = form(&req.body);
    match f.get("grant_type").map(String::as_str) {
        Some(TOKEN_EXCHANGE) => {
            if let Some(error) = &opts.idp_error {
                let description = if opts.idp_echo_subject {
                    format!(
                        "subject token {} rejected",
                        f.get("subject_token").map(String::as_str).unwrap_or("")
                    )
                } else {
                    "subject token rejected".to_owned()
                };
                return conn.json(
                    400,
                    &[],
                    &json!({"error": error, "error_description": description}),
                );
            }
            let jag = fake_jwt(&json!({
                "iss": format!("{origin}/idp"),
                "aud": f.get("audience"),
                "resource": f.get("resource"),
                "jti": st.next("jag"),
            }));
            st.id_jags.lock().unwrap().push(jag.clone());
            let issued = opts.idp_issued_type.as_deref().unwrap_or(ID_JAG);
            conn.json(
                200,
                &[("Cache-Control", "no-store")],
                &json!({"access_token": jag, "issued_token_type": issued, "token_type": "N_A"}),
            )
        }
        Some("authorization_code") => {
            let code = f.get("code").cloned().unwrap_or_default();
            let Some((challenge, redirect)) = st.codes.lock().unwrap().remove(&code) else {
                return conn.json(400, &[], &json!({"error": "invalid_grant"}));
            };
            let verifier = f.get("code_verifier").cloned().unwrap_or_default();
            if s256(&verifier) != challenge || f.get("redirect_uri") != Some(&redirect) {
                return conn.json(400, &[], &json!({"error": "invalid_grant"}));
            }
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let id_token = fake_jwt(&json!({
                "iss": format!("{origin}/idp"),
                "sub": "person",
                "exp": now + 3600,
                "jti": st.next("id"),
            }));
            st.id_tokens.lock().unwrap().push(id_token.clone());
            conn.json(
                200,
                &[("Cache-Control", "no-store")],
                &json!({
                    "access_token": st.next("idp-at"),
                    "token_type": "Bearer",
                    "expires_in": 3600,
                    "id_token": id_token,
                }),
            )
        }
        _ => conn.json(400, &[], &json!({"error": "unsupported_grant_type"})),
    }
}

/// Answers 401 (with the challenge) for a request without a valid token; `true` when it did.
fn refuse(
    opts: &AsOptions,
    st: &AsState,
    origin: &str,
    resource: &str,
    req: &Req,
    conn: &mut Conn,
) -> bool {
    let authorization = req.header("authorization");
    let dpop_token = authorization.and_then(|v| v.strip_prefix("DPoP "));
    let token = authorization
        .and_then(|v| v.strip_prefix("Bearer "))
        .or(dpop_token)
        .map(str::to_owned);
    if token.is_some_and(|t| st.access.lock().unwrap().contains(&t)) {
        let Some(want) = opts.rs_dpop_nonce.as_ref().filter(|_| dpop_token.is_some()) else {
            return false;
        };
        let sent = req
            .header("DPoP")
            .and_then(|p| proof_claims(p)["nonce"].as_str().map(str::to_owned));
        if sent.as_deref() == Some(want.as_str()) && !opts.rs_nonce_never_accepted {
            return false;
        }
        let nonce = if opts.rs_nonce_never_accepted {
            st.next(want)
        } else {
            want.clone()
        };
        conn.json(
            401,
            &[
                (
                    "WWW-Authenticate",
                    r#"DPoP error="use_dpop_nonce", error_description="a nonce is required""#,
                ),
                ("DPoP-Nonce", nonce.as_str()),
            ],
            &json!({"error": "use_dpop_nonce"}),
        );
        return true;
    }
    st.unauthorized.fetch_add(1, Ordering::SeqCst);
    let rm = opts
        .resource_metadata
        .clone()
        .unwrap_or_else(|| format!("{origin}/.well-known/oauth-protected-resource/{resource}"));
    let scheme = if opts.dpop_challenge {
        "DPoP"
    } else {
        "Bearer"
    };
    let mut challenge = format!(r#"{scheme} error="invalid_token", resource_metadata="{rm}""#);
    if let Some(s) = &opts.challenge_scope {
        challenge.push_str(&format!(r#", scope="{s}""#));
    }
    conn.json(
        401,
        &[("WWW-Authenticate", challenge.as_str())],
        &json!({"error": "invalid_token"}),
    );
    true
}

/// The JSON-RPC answer to a request (`None` for a notification).
fn answer(msg: &Value) -> Option<Value> {
    let id = msg.get("id")?.clone();
    let r = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": if msg["params"]["protocolVersion"] == "2024-11-05" { "2024-11-05" } else { "2025-11-25" },
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oauth-test", "version": "1"},
        }),
        "tools/list" => json!({"tools": [{"name": "hello", "inputSchema": {"type": "object"}}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "hi"}]}),
        _ => json!({}),
    };
    Some(result(&id, r))
}

/// Legacy HTTP+SSE: the stream announces `/messages`, then carries the answers.
fn legacy_stream(opts: &AsOptions, st: &AsState, origin: &str, req: &Req, conn: &mut Conn) {
    if refuse(opts, st, origin, "sse", req, conn) {
        return;
    }
    conn.sse_start(&[]);
    let _ = conn.chunk("event: endpoint\ndata: /messages\n\n");
    loop {
        match st.sse_rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(msg) => {
                if conn.event(None, &msg).is_err() {
                    break;
                }
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                // Probe the connection so a closed client ends this loop.
                if conn.chunk(": ping\n\n").is_err() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    conn.set_keep_alive(false);
}

fn mcp(opts: &AsOptions, st: &AsState, origin: &str, req: &Req, conn: &mut Conn) {
    if refuse(opts, st, origin, "mcp", req, conn) {
        return;
    }
    if let Some(scope) = &opts.forbid_scope {
        let challenge = format!(r#"Bearer error="insufficient_scope", scope="{scope}""#);
        return conn.json(
            403,
            &[("WWW-Authenticate", challenge.as_str())],
            &json!({"error": "insufficient_scope"}),
        );
    }
    let msg = req.json();
    if opts.echo_authorization && msg["method"] == "tools/call" {
        let quoted = format!(
            "you sent {} {}",
            req.header("authorization").unwrap_or(""),
            req.header("DPoP").unwrap_or("")
        );
        match msg["params"]["name"].as_str() {
            Some("leak_http") => return conn.respond(500, &[], quoted.as_bytes()),
            Some("leak_rpc") => {
                return conn.json(
                    200,
                    &[],
                    &json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32000, "message": quoted}}),
                )
            }
            _ => {}
        }
    }
    match answer(&msg) {
        Some(a) => conn.json(200, &[], &a),
        None => conn.accepted(),
    }
}

/// Plays the browser for the flow: GETs the authorization URL without following the redirect
/// and returns the `Location`.
pub fn headless(url: &str) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .build()
        .into();
    let resp = agent.get(url).call().map_err(|e| e.to_string())?;
    resp.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| format!("no redirect ({})", resp.status()))
}

/// Plays the browser all the way: GETs the authorization URL, then follows its redirect to
/// the loopback listener.
pub fn browser(url: &str) -> Result<(), String> {
    let location = headless(url)?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let resp = agent.get(&location).call().map_err(|e| e.to_string())?;
    if resp.status() != 200 {
        return Err(format!("the loopback listener answered {}", resp.status()));
    }
    Ok(())
}

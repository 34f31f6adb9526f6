//! The OAuth sign-in the command line chooses (the options under "OAuth" in `mcpb --help`):
//!
//! | options | grant |
//! |---|---|
//! | none (`login`) | authorization code: a person signs in in the browser (--client-id, --client-secret: a pre-registered client) |
//! | --client-id, --client-secret (not `login`) | client credentials (machine to machine) |
//! | --assertion-file or --assertion-env | workload identity: the platform's JWT, `jwt-bearer` grant |
//! | --idp-issuer, --idp-client-id, --client-id [, --client-secret, --idp-token-endpoint, --idp-client-secret, --id-token-file or --id-token-env] | enterprise-managed authorization |
//!
//! --dpop and --no-dpop apply to any of them; --scope too. Options that contradict each other
//! (two sources of one JWT, the options of two grants, --dpop with --no-dpop) are usage
//! errors naming them.

use mcp_blocking::auth::{AssertionSource, EnterpriseIdp, OAuthConfig, RedirectHandler};

use crate::args::{Global, UsageError};

/// Where a JWT comes from: `--assertion-file`, `--id-token-env`...
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum Source {
    File(String),
    Env(String),
}

impl Source {
    fn to_assertion(&self) -> AssertionSource {
        match self {
            Source::File(path) => AssertionSource::file(path),
            Source::Env(name) => AssertionSource::env(name),
        }
    }
}

/// The enterprise identity provider of `--idp-*`.
#[derive(Clone)]
pub(crate) struct Idp {
    pub(crate) issuer: String,
    pub(crate) token_endpoint: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    pub(crate) id_token: Option<Source>,
}

/// A grant other than the authorization code.
#[derive(Clone)]
pub(crate) enum Grant {
    /// `--client-id` and `--client-secret` on a command other than `login`: client credentials.
    Machine { id: String, secret: String },
    /// `--assertion-file` or `--assertion-env`.
    Workload(Source),
    /// `--idp-*`.
    Enterprise(Idp),
}

/// What the OAuth options ask for.
#[derive(Clone, Default)]
pub(crate) struct SignIn {
    /// `None`: the authorization code (`login`), or the config entry's block, or the stored
    /// sign-in.
    pub(crate) grant: Option<Grant>,
    /// `--dpop` (`Some(true)`), `--no-dpop` (`Some(false)`).
    pub(crate) dpop: Option<bool>,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) scopes: Vec<String>,
}

/// The OAuth options given (long names, as typed), in the order of `mcpb --help`.
pub(crate) fn given(global: &Global) -> Vec<&'static str> {
    [
        ("--client-id", global.client_id.is_some()),
        ("--client-secret", global.client_secret.is_some()),
        ("--scope", !global.scope.is_empty()),
        ("--dpop", global.dpop),
        ("--no-dpop", global.no_dpop),
        ("--assertion-file", global.assertion_file.is_some()),
        ("--assertion-env", global.assertion_env.is_some()),
        ("--idp-issuer", global.idp_issuer.is_some()),
        ("--idp-token-endpoint", global.idp_token_endpoint.is_some()),
        ("--idp-client-id", global.idp_client_id.is_some()),
        ("--idp-client-secret", global.idp_client_secret.is_some()),
        ("--id-token-file", global.id_token_file.is_some()),
        ("--id-token-env", global.id_token_env.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect()
}

/// Every OAuth option, for the commands that take none.
pub(crate) const ALL: [&str; 13] = [
    "--client-id",
    "--client-secret",
    "--scope",
    "--dpop",
    "--no-dpop",
    "--assertion-file",
    "--assertion-env",
    "--idp-issuer",
    "--idp-token-endpoint",
    "--idp-client-id",
    "--idp-client-secret",
    "--id-token-file",
    "--id-token-env",
];

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// One source of a JWT from a file option and a variable option, at most one given.
fn one_source(
    file: (&str, &Option<String>),
    env: (&str, &Option<String>),
) -> Result<Option<Source>, UsageError> {
    let empty = |name: &str| usage(format!("{name} is empty"));
    match (file.1, env.1) {
        (Some(_), Some(_)) => usage(format!(
            "{} and {} name two sources of one token: give one",
            file.0, env.0
        )),
        (Some(f), None) if f.trim().is_empty() => empty(file.0),
        (None, Some(e)) if e.trim().is_empty() => empty(env.0),
        (Some(f), None) => Ok(Some(Source::File(f.clone()))),
        (None, Some(e)) => Ok(Some(Source::Env(e.clone()))),
        (None, None) => Ok(None),
    }
}

/// Reads and checks the OAuth options of `global` for `login` (`login: true`) or another
/// command.
pub(crate) fn options(global: &Global, login: bool) -> Result<SignIn, UsageError> {
    let dpop = match (global.dpop, global.no_dpop) {
        (true, true) => return usage("--dpop and --no-dpop contradict each other: give one"),
        (true, false) => Some(true),
        (false, true) => Some(false),
        (false, false) => None,
    };
    let assertion = one_source(
        ("--assertion-file", &global.assertion_file),
        ("--assertion-env", &global.assertion_env),
    )?;
    let id_token = one_source(
        ("--id-token-file", &global.id_token_file),
        ("--id-token-env", &global.id_token_env),
    )?;
    let all = given(global);
    let enterprise = all
        .iter()
        .find(|o| o.starts_with("--idp-") || o.starts_with("--id-token-"));
    let workload = all.iter().find(|o| o.starts_with("--assertion-"));
    if let (Some(w), Some(e)) = (workload, enterprise) {
        return usage(format!(
            "{w} (workload identity) and {e} (enterprise authorization) choose two different \
             sign-ins: give the options of one"
        ));
    }
    if global.client_secret.is_some() && global.client_id.is_none() {
        return usage("--client-secret needs --client-id");
    }
    if global.idp_client_secret.is_some() && global.idp_client_id.is_none() {
        return usage("--idp-client-secret needs --idp-client-id");
    }
    let grant = if let Some(source) = assertion {
        Some(Grant::Workload(source))
    } else if let Some(option) = enterprise {
        let (Some(issuer), Some(client_id)) = (&global.idp_issuer, &global.idp_client_id) else {
            let missing = match (&global.idp_issuer, &global.idp_client_id) {
                (None, None) => "--idp-issuer and --idp-client-id",
                (None, Some(_)) => "--idp-issuer",
                _ => "--idp-client-id",
            };
            return usage(format!(
                "{option} (enterprise authorization) needs {missing}: the identity provider's \
                 issuer URL and this client's id there"
            ));
        };
        if global.client_id.is_none() {
            return usage(format!(
                "{option} (enterprise authorization) needs --client-id: this client's id at the \
                 MCP server's authorization server"
            ));
        }
        Some(Grant::Enterprise(Idp {
            issuer: issuer.clone(),
            token_endpoint: global.idp_token_endpoint.clone(),
            client_id: client_id.clone(),
            client_secret: global.idp_client_secret.clone(),
            id_token,
        }))
    } else if login {
        None
    } else {
        match (&global.client_id, &global.client_secret) {
            (None, None) if global.scope.is_empty() => None,
            (Some(id), Some(secret)) => Some(Grant::Machine {
                id: id.clone(),
                secret: secret.clone(),
            }),
            _ => {
                return usage(
                    "--client-id with --client-secret (and optionally --scope) sign in as a \
                     machine client; for a person's sign-in use `login`",
                )
            }
        }
    };
    Ok(SignIn {
        grant,
        dpop,
        client_id: global.client_id.clone(),
        client_secret: global.client_secret.clone(),
        scopes: global.scopes(),
    })
}

impl SignIn {
    /// Whether any option asks for OAuth on the server (an option a stdio server cannot take).
    pub(crate) fn is_set(&self) -> bool {
        self.grant.is_some() || self.dpop.is_some()
    }

    /// The settings of the grant the options chose (`None`: no grant option); `person` is how
    /// a person would sign in at an enterprise identity provider (without an ID token source).
    pub(crate) fn grant_config(&self, person: RedirectHandler) -> Option<OAuthConfig> {
        let oauth = match self.grant.as_ref()? {
            Grant::Machine { id, secret } => {
                return Some(OAuthConfig::client_credentials(id, secret))
            }
            Grant::Workload(source) => OAuthConfig::workload_identity(source.to_assertion()),
            Grant::Enterprise(idp) => {
                let mut provider = EnterpriseIdp::new(&idp.issuer, &idp.client_id);
                if let Some(url) = &idp.token_endpoint {
                    provider = provider.token_endpoint(url);
                }
                if let Some(secret) = &idp.client_secret {
                    provider = provider.client_secret(secret);
                }
                provider = match &idp.id_token {
                    Some(source) => provider.id_token(source.to_assertion()),
                    None => provider.sign_in(person),
                };
                OAuthConfig::enterprise(provider)
            }
        };
        Some(self.client(oauth))
    }

    /// `oauth` with --client-id and --client-secret.
    pub(crate) fn client(&self, mut oauth: OAuthConfig) -> OAuthConfig {
        if let Some(id) = &self.client_id {
            oauth = oauth.client_id(id);
        }
        if let Some(secret) = &self.client_secret {
            oauth = oauth.client_secret(secret);
        }
        oauth
    }

    /// `oauth` with --scope (when given) and --dpop or --no-dpop.
    pub(crate) fn finish(&self, mut oauth: OAuthConfig) -> OAuthConfig {
        if !self.scopes.is_empty() {
            oauth = oauth.scopes(self.scopes.clone());
        }
        match self.dpop {
            Some(on) => oauth.dpop(on),
            None => oauth,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{parse, Parsed};

    fn global(args: &[&str]) -> Global {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args) {
            Ok(Parsed::Run(cli)) => cli.global,
            _ => panic!("{args:?} does not parse"),
        }
    }

    fn refused(args: &[&str], login: bool) -> String {
        match options(&global(args), login) {
            Ok(_) => panic!("{args:?} accepted"),
            Err(UsageError(m)) => m,
        }
    }

    #[test]
    fn each_grant_is_chosen_by_its_options() {
        let s = options(&global(&["--url", "u", "tools"]), false).unwrap();
        assert!(s.grant.is_none() && s.dpop.is_none() && !s.is_set());
        let s = options(
            &global(&[
                "--url",
                "u",
                "--client-id",
                "i",
                "--client-secret",
                "x",
                "tools",
            ]),
            false,
        )
        .unwrap();
        assert!(
            matches!(&s.grant, Some(Grant::Machine { id, secret }) if id == "i" && secret == "x")
        );
        // On `login`, the client id and secret are the authorization code's client.
        let s = options(
            &global(&[
                "--url",
                "u",
                "--client-id",
                "i",
                "--client-secret",
                "x",
                "login",
            ]),
            true,
        )
        .unwrap();
        assert!(s.grant.is_none());
        assert_eq!(s.client_id.as_deref(), Some("i"));
        let s = options(
            &global(&[
                "--url",
                "u",
                "--assertion-env",
                "TOKEN",
                "--dpop",
                "--scope",
                "a b",
                "tools",
            ]),
            false,
        )
        .unwrap();
        assert!(matches!(&s.grant, Some(Grant::Workload(Source::Env(v))) if v == "TOKEN"));
        assert_eq!((s.dpop, s.scopes.len()), (Some(true), 2));
        let s = options(
            &global(&[
                "--url",
                "u",
                "--idp-issuer",
                "https://idp",
                "--idp-client-id",
                "c",
                "--id-token-file",
                "/t",
                "--client-id",
                "mcp",
                "--no-dpop",
                "tools",
            ]),
            false,
        )
        .unwrap();
        let Some(Grant::Enterprise(idp)) = &s.grant else {
            panic!("enterprise")
        };
        assert_eq!(idp.issuer, "https://idp");
        assert_eq!(idp.id_token, Some(Source::File("/t".into())));
        assert_eq!((s.client_id.as_deref(), s.dpop), (Some("mcp"), Some(false)));
        let shown = format!("{:?}", s.grant_config(RedirectHandler::none()).unwrap());
        assert!(shown.contains("AssertionSource::file(/t)"), "{shown}");
    }

    #[test]
    fn contradicting_options_are_refused_by_name() {
        fn with<'a>(more: &[&'a str]) -> Vec<&'a str> {
            [&["--url", "u"][..], more, &["tools"]].concat()
        }
        assert_eq!(
            refused(&with(&["--dpop", "--no-dpop"]), false),
            "--dpop and --no-dpop contradict each other: give one"
        );
        assert_eq!(
            refused(
                &with(&["--assertion-file", "f", "--assertion-env", "V"]),
                false
            ),
            "--assertion-file and --assertion-env name two sources of one token: give one"
        );
        let m = refused(
            &with(&[
                "--idp-issuer",
                "https://i",
                "--idp-client-id",
                "c",
                "--id-token-file",
                "f",
                "--id-token-env",
                "V",
            ]),
            false,
        );
        assert!(m.contains("--id-token-file and --id-token-env"), "{m}");
        let m = refused(
            &with(&["--assertion-env", "V", "--idp-issuer", "https://i"]),
            false,
        );
        assert!(
            m.contains("--assertion-env (workload identity) and --idp-issuer (enterprise"),
            "{m}"
        );
        let m = refused(&with(&["--idp-issuer", "https://i"]), true);
        assert!(
            m.contains("--idp-issuer (enterprise authorization) needs --idp-client-id"),
            "{m}"
        );
        let m = refused(
            &with(&["--idp-issuer", "https://i", "--idp-client-id", "c"]),
            true,
        );
        assert!(
            m.contains("(enterprise authorization) needs --client-id"),
            "{m}"
        );
        let m = refused(&with(&["--id-token-env", "T"]), false);
        assert!(m.contains("needs --idp-issuer and --idp-client-id"), "{m}");
        assert_eq!(
            refused(&with(&["--client-secret", "s"]), true),
            "--client-secret needs --client-id"
        );
        let m = refused(
            &with(&["--idp-issuer", "https://i", "--idp-client-secret", "s"]),
            false,
        );
        assert_eq!(m, "--idp-client-secret needs --idp-client-id");
        assert!(refused(&with(&["--client-id", "i"]), false).contains("machine client"));
        assert_eq!(
            refused(&with(&["--assertion-file", " "]), false),
            "--assertion-file is empty"
        );
    }
}

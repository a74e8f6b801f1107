//! Credentials and TLS for talking to load tools.
//!
//! Why it exists: the controller holds the keys to someone's load generator.
//! Secrets are therefore never written inline in the config (where they
//! would end up in `check` output, bug reports and version control): a bearer
//! token or a basic-auth password is read from a file (`*_file`) or an
//! environment variable (`*_env`) at start-up, kept in a [`Secret`] whose
//! `Debug`, `Display` and `Serialize` all print `<redacted>`, and applied to
//! requests as headers. URLs with inline `user:password@` are rejected by
//! config validation for the same reason.
//!
//! TLS uses rustls: a custom CA bundle (`ca_file`) is trusted in addition to
//! the built-in web roots, and a client certificate (`cert_file` +
//! `key_file`, PEM) can be presented.
//!
//! What it may touch: the files and environment variables it is pointed at.

pub mod token;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, Serializer};
use thiserror::Error;

/// A secret value: never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, for building a request header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

/// `auth = { ... }` on a signal or control: where the secret comes from.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// File holding a bearer token (trailing newline ignored).
    pub bearer_token_file: Option<PathBuf>,
    /// Environment variable holding a bearer token.
    pub bearer_token_env: Option<String>,
    /// Basic-auth user name (not a secret).
    pub username: Option<String>,
    /// File holding the basic-auth password.
    pub password_file: Option<PathBuf>,
    /// Environment variable holding the basic-auth password.
    pub password_env: Option<String>,
}

/// `tls = { ... }` on a signal or control.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM bundle of CA certificates to trust (in addition to web roots).
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate chain.
    pub cert_file: Option<PathBuf>,
    /// PEM private key of the client certificate.
    pub key_file: Option<PathBuf>,
}

impl TlsConfig {
    /// Whether anything is set.
    pub fn is_empty(&self) -> bool {
        self.ca_file.is_none() && self.cert_file.is_none() && self.key_file.is_none()
    }
}

/// A credential problem; the message never contains the secret.
#[derive(Debug, Error)]
pub(crate) enum AuthError {
    /// More than one source, or a password without a user.
    #[error("{0}")]
    Conflict(String),
    /// A secret file could not be read.
    #[error("cannot read {path}: {source}")]
    File {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An environment variable is unset or empty.
    #[error("environment variable `{0}` is not set (or is empty)")]
    Env(String),
    /// A TLS file is not valid PEM.
    #[error("{path}: {reason}")]
    Tls {
        /// The path.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// Resolved credentials, applied to each request.
#[derive(Debug, Clone, Default)]
pub enum Credentials {
    /// No authentication.
    #[default]
    None,
    /// `Authorization: Bearer ...`
    Bearer(Secret),
    /// `Authorization: Basic ...`
    Basic {
        /// The user.
        username: String,
        /// The password.
        password: Secret,
    },
}

impl Credentials {
    /// Resolves an auth config: reads the files and variables it names.
    pub(crate) fn resolve(cfg: &AuthConfig) -> Result<Credentials, AuthError> {
        let bearer = read_one(
            "bearer_token",
            cfg.bearer_token_file.as_deref(),
            cfg.bearer_token_env.as_deref(),
        )?;
        let password = read_one(
            "password",
            cfg.password_file.as_deref(),
            cfg.password_env.as_deref(),
        )?;
        match (bearer, &cfg.username, password) {
            (None, None, None) => Ok(Credentials::None),
            (Some(t), None, None) => Ok(Credentials::Bearer(t)),
            (None, Some(u), Some(p)) => Ok(Credentials::Basic {
                username: u.clone(),
                password: p,
            }),
            (None, Some(_), None) => Err(AuthError::Conflict(
                "`username` needs `password_file` or `password_env`".into(),
            )),
            (None, None, Some(_)) => {
                Err(AuthError::Conflict("a password needs a `username`".into()))
            }
            (Some(_), _, _) => Err(AuthError::Conflict(
                "give either a bearer token or basic auth, not both".into(),
            )),
        }
    }

    /// Adds the credentials to a request.
    pub fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Credentials::None => request,
            Credentials::Bearer(t) => request.bearer_auth(t.expose()),
            Credentials::Basic { username, password } => {
                request.basic_auth(username, Some(password.expose()))
            }
        }
    }
}

fn read_one(
    what: &str,
    file: Option<&Path>,
    env: Option<&str>,
) -> Result<Option<Secret>, AuthError> {
    match (file, env) {
        (Some(_), Some(_)) => Err(AuthError::Conflict(format!(
            "give `{what}_file` or `{what}_env`, not both"
        ))),
        (Some(path), None) => {
            let text = std::fs::read_to_string(path).map_err(|source| AuthError::File {
                path: path.display().to_string(),
                source,
            })?;
            let value = text.trim_end_matches(['\n', '\r']).to_string();
            if value.is_empty() {
                return Err(AuthError::Conflict(format!("{} is empty", path.display())));
            }
            Ok(Some(Secret(value)))
        }
        (None, Some(var)) => match std::env::var(var) {
            Ok(v) if !v.is_empty() => Ok(Some(Secret(v))),
            _ => Err(AuthError::Env(var.to_string())),
        },
        (None, None) => Ok(None),
    }
}

/// Applies a TLS config to a client builder.
pub(crate) fn apply_tls(
    mut builder: reqwest::ClientBuilder,
    tls: &TlsConfig,
) -> Result<reqwest::ClientBuilder, AuthError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| AuthError::File {
            path: p.display().to_string(),
            source,
        })
    };
    if let Some(ca) = &tls.ca_file {
        let pem = read(ca)?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| AuthError::Tls {
            path: ca.display().to_string(),
            reason: format!("not a PEM certificate bundle: {e}"),
        })?;
        if certs.is_empty() {
            return Err(AuthError::Tls {
                path: ca.display().to_string(),
                reason: "no certificate in the bundle".into(),
            });
        }
        for c in certs {
            builder = builder.add_root_certificate(c);
        }
    }
    match (&tls.cert_file, &tls.key_file) {
        (Some(cert), Some(key)) => {
            let mut pem = read(cert)?;
            pem.push(b'\n');
            pem.extend(read(key)?);
            let id = reqwest::Identity::from_pem(&pem).map_err(|e| AuthError::Tls {
                path: cert.display().to_string(),
                reason: format!("client certificate and key are not valid PEM: {e}"),
            })?;
            builder = builder.identity(id);
        }
        (None, None) => {}
        _ => {
            return Err(AuthError::Conflict(
                "a client certificate needs both `cert_file` and `key_file`".into(),
            ))
        }
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s}"), "<redacted>");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"<redacted>\"");
        let c = Credentials::Basic {
            username: "u".into(),
            password: s,
        };
        assert!(!format!("{c:?}").contains("hunter2"));
    }

    #[test]
    fn resolve_reads_files_and_env() {
        let dir = std::env::temp_dir().join(format!("tg-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("token");
        std::fs::write(&f, "abc\n").unwrap();
        let c = Credentials::resolve(&AuthConfig {
            bearer_token_file: Some(f.clone()),
            ..Default::default()
        })
        .unwrap();
        assert!(matches!(c, Credentials::Bearer(ref t) if t.expose() == "abc"));

        std::env::set_var("TG_AUTH_TEST_PW", "pw");
        let c = Credentials::resolve(&AuthConfig {
            username: Some("me".into()),
            password_env: Some("TG_AUTH_TEST_PW".into()),
            ..Default::default()
        })
        .unwrap();
        assert!(matches!(c, Credentials::Basic { ref password, .. } if password.expose() == "pw"));

        let e = Credentials::resolve(&AuthConfig {
            bearer_token_env: Some("TG_AUTH_TEST_UNSET_VAR".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("TG_AUTH_TEST_UNSET_VAR"));

        let e = Credentials::resolve(&AuthConfig {
            bearer_token_file: Some(f),
            username: Some("me".into()),
            password_env: Some("TG_AUTH_TEST_PW".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("not both"));
    }
}

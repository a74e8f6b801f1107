//! Bearer tokens: read from a file or an environment variable, never inline.
//!
//! Why it exists: a config file is checked into repositories and pasted into
//! tickets, so a secret never lives in it. The config names where the token
//! is (`bearer_token_file` or `bearer_token_env`); the token is read when a
//! target is built (so a reload picks up a rotated file) and never logged.

use std::path::Path;

/// The token named by `file` or `env` (at most one may be given).
pub fn read(file: Option<&Path>, env: Option<&str>) -> Result<Option<String>, String> {
    let raw = match (file, env) {
        (Some(_), Some(_)) => {
            return Err("give either a token file or a token variable, not both".into())
        }
        (Some(path), None) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?,
        (None, Some(var)) => std::env::var(var).map_err(|_| {
            format!("the environment variable `{var}` that should hold the token is not set")
        })?,
        (None, None) => return Ok(None),
    };
    let token = raw.trim().to_string();
    if token.is_empty() {
        return Err("the bearer token is empty".into());
    }
    Ok(Some(token))
}

/// The credentials of an `Authorization: Bearer <token>` value, trimmed.
/// The scheme is case-insensitive (RFC 9110 §11.1): `bearer x` and
/// `BEARER x` are `Bearer x`.
pub fn bearer(authorization: &str) -> Option<&str> {
    let value = authorization.trim_start();
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case("bearer") || !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some(rest.trim())
}

/// Checks that the token can be read, without returning it.
pub fn check(file: Option<&Path>, env: Option<&str>) -> Result<(), String> {
    read(file, env).map(|_| ())
}

/// The `Authorization` value of HTTP basic auth: `Basic base64(user:password)`.
pub fn basic(user: &str, password: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let input = format!("{user}:{password}");
    let mut out = String::from("Basic ");
    for chunk in input.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Compares a presented token with the expected one in constant time.
pub fn matches(presented: &str, expected: &str) -> bool {
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, &x) in b.iter().enumerate() {
        diff |= usize::from(x ^ a.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_comes_from_a_file_or_a_variable() {
        let dir = std::env::temp_dir().join(format!("tg-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "s3cret\n").unwrap();
        assert_eq!(read(Some(&file), None).unwrap().as_deref(), Some("s3cret"));
        assert_eq!(read(None, None).unwrap(), None);
        assert!(read(Some(&file), Some("X"))
            .unwrap_err()
            .contains("not both"));
        let e = read(None, Some("TG_TEST_SURELY_UNSET_VAR")).unwrap_err();
        assert!(e.contains("not set"), "{e}");
        std::fs::write(&file, "  \n").unwrap();
        assert!(read(Some(&file), None).unwrap_err().contains("empty"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 27 #8: the scheme is case-insensitive.
    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for v in ["Bearer s3", "bearer s3", "BEARER  s3 ", "BeArEr\ts3"] {
            assert_eq!(bearer(v), Some("s3"), "{v}");
        }
        for v in ["Basic s3", "Bearers3", "Bear s3", "", "Bearer"] {
            assert_eq!(bearer(v), None, "{v}");
        }
    }

    #[test]
    fn basic_auth_is_base64_of_user_colon_password() {
        assert_eq!(
            basic("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(basic("a", "b"), "Basic YTpi");
        assert_eq!(basic("ab", "c"), "Basic YWI6Yw==");
        assert_eq!(basic("ab", "cd"), "Basic YWI6Y2Q=");
    }

    #[test]
    fn comparison_needs_every_byte() {
        assert!(matches("abc", "abc"));
        assert!(!matches("abd", "abc"));
        assert!(!matches("ab", "abc"));
        assert!(!matches("abcd", "abc"));
        assert!(!matches("", "abc"));
    }
}

//! Redaction of credentials in URLs inside any message.
//!
//! Why it exists: a URL that fails to parse (`http://admin:pw@host:99999/`)
//! cannot be cleaned by a URL library, yet its text is what a person needs
//! to see to fix the config. This works on the text alone: in every
//! `scheme://` it replaces the user-info before `@` with `***`, and the
//! values of query parameters whose names suggest a secret. Config errors
//! and log lines both pass through it.

/// Query parameter names whose values are secrets.
const SECRET_KEYS: &[&str] = &[
    "token",
    "access_token",
    "api_key",
    "apikey",
    "key",
    "password",
    "passwd",
    "pass",
    "secret",
    "auth",
    "signature",
    "sig",
];

/// Characters that end a URL inside a message.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '<' | '>' | ')' | ']')
}

/// `text` with credentials in every URL replaced by `***`.
pub(crate) fn urls(text: &str) -> String {
    if !text.contains("://") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail.find(ends_url).unwrap_or(tail.len());
        let (url, after) = tail.split_at(end);
        out.push_str(&redact_one(url));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// One URL without its scheme (`user:pw@host:port/path?query`).
fn redact_one(url: &str) -> String {
    let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
    let (authority, path) = url.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => format!("***@{}", &authority[at + 1..]),
        None => authority.to_string(),
    };
    let path = match path.split_once('?') {
        Some((p, query)) => {
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, Some(f)),
                None => (query, None),
            };
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) if SECRET_KEYS.contains(&k.to_ascii_lowercase().as_str()) => {
                        format!("{k}=***")
                    }
                    _ => pair.to_string(),
                })
                .collect();
            let mut p = format!("{p}?{}", query.join("&"));
            if let Some(f) = fragment {
                p.push('#');
                p.push_str(f);
            }
            p
        }
        None => path.to_string(),
    };
    authority + &path
}

#[cfg(test)]
mod tests {
    use super::urls;

    #[test]
    fn user_info_and_secret_parameters_are_hidden() {
        assert_eq!(
            urls("`http://admin:hunter2PW@127.0.0.1:99999/metrics` is not a URL"),
            "`http://***@127.0.0.1:99999/metrics` is not a URL"
        );
        assert_eq!(
            urls("see http://u@h/x?a=1&token=abc#f and ws://p:q@[::1"),
            "see http://***@h/x?a=1&token=***#f and ws://***@[::1"
        );
        assert_eq!(urls("no url here"), "no url here");
        assert_eq!(urls("http://a@b@c/"), "http://***@c/");
    }
}

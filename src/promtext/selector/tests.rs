use super::*;

fn sel(src: &str) -> Selector {
    src.parse().unwrap_or_else(|e| panic!("{src:?}: {e}"))
}

/// Issue 27 #7: a duplicated attempts line counted twice halved the
/// failure fraction (the old `sum_many` summed every line). One sample
/// per series now: the first, or the latest timestamp.
#[test]
fn a_duplicated_series_counts_once() {
    let attempts = sel("req_total");
    let failures = sel(r#"req_total{outcome="failure"}"#);
    let text = "req_total{outcome=\"success\"} 90\n\
                    req_total{outcome=\"failure\"} 10\n\
                    req_total{outcome=\"success\"} 90\n\
                    req_total{outcome=\"failure\"} 10\n";
    let limits = Limits::default();
    let sums = sum_many(text, &[&attempts, &failures], &limits).unwrap();
    assert_eq!(sums, vec![Some(100.0), Some(10.0)]);
    let frac = sums[1].unwrap() / sums[0].unwrap();
    assert_eq!(frac, 0.1, "the failure fraction is not diluted");
    // Label order does not make another series; the first is kept.
    let text = "a{x=\"1\",y=\"2\"} 3\na{y=\"2\",x=\"1\"} 5\na{x=\"2\"} 1\n";
    assert_eq!(
        sum_many(text, &[&sel("a")], &limits).unwrap(),
        vec![Some(4.0)]
    );
    // Timestamped samples (a backfill): the latest wins, in any order.
    let text = "a 5 2000\na 7 3000\na 6 1000\n";
    assert_eq!(
        sum_many(text, &[&sel("a")], &limits).unwrap(),
        vec![Some(7.0)]
    );
}

fn bad(src: &str) -> SelectorError {
    match src.parse::<Selector>() {
        Ok(selector) => panic!("{src:?} parsed to {selector:?}"),
        Err(e) => e,
    }
}

fn series(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
    Sample {
        name: name.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        value,
    }
}

#[test]
fn each_matcher_type() {
    let labels = [("op", "read"), ("result", "failure")];
    let cases = [
        ("a", true),
        ("b", false),
        ("a{}", true),
        (r#"a{op="read"}"#, true),
        (r#"a{op="write"}"#, false),
        (r#"a{op!="write"}"#, true),
        (r#"a{op!="read"}"#, false),
        (r#"a{op=~"re.*"}"#, true),
        (r#"a{op=~"re"}"#, false),
        (r#"a{op=~"ead"}"#, false),
        (r#"a{op=~"read|write"}"#, true),
        (r#"a{op!~"w.*"}"#, true),
        (r#"a{op!~"r.*"}"#, false),
        (r#"a{op="read", result="failure"}"#, true),
        (r#"a{op="read", result="success"}"#, false),
        (r#"{__name__="a"}"#, true),
        (r#"{__name__="b"}"#, false),
        (r#"{__name__=~"a|b", op="read"}"#, true),
        (r#"{__name__!="a", op="read"}"#, false),
        (r#"{__name__="a", __name__="b"}"#, false),
        (r#"{op="read"}"#, true),
        (r#"a{op=~"(?i)READ"}"#, true),
    ];
    for (src, expected) in cases {
        assert_eq!(sel(src).matches("a", &labels), expected, "{src}");
    }
}

#[test]
fn empty_value_matches_a_missing_label() {
    let labels: [(&str, &str); 1] = [("op", "read")];
    assert!(sel(r#"a{missing=""}"#).matches("a", &labels));
    assert!(!sel(r#"a{op=""}"#).matches("a", &labels));
    assert!(sel(r#"a{missing!="x"}"#).matches("a", &labels));
    assert!(!sel(r#"a{missing!=""}"#).matches("a", &labels));
    assert!(sel(r#"a{missing=~"x?"}"#).matches("a", &labels));
    assert!(!sel(r#"a{missing=~".+"}"#).matches("a", &labels));
    assert!(sel(r#"a{missing!~".+"}"#).matches("a", &labels));
    // An empty label value is the same as no label.
    assert!(sel(r#"a{op=""}"#).matches("a", &[("op", "")]));
}

#[test]
fn regex_is_anchored_and_dot_matches_newline() {
    let s = sel(r#"a{x=~"b.d"}"#);
    assert!(s.matches("a", &[("x", "bcd")]));
    assert!(s.matches("a", &[("x", "b\nd")]));
    assert!(!s.matches("a", &[("x", "abcd")]));
    assert!(!s.matches("a", &[("x", "bcde")]));
    // An alternation cannot escape the anchors.
    let s = sel(r#"a{x=~"b|c"}"#);
    assert!(!s.matches("a", &[("x", "bc")]));
    assert!(!s.matches("a", &[("x", "xb")]));
}

#[test]
fn values_with_special_characters() {
    let cases: &[(&str, &str)] = &[
        (r#"a{route="/users/{id}"}"#, "/users/{id}"),
        (r#"a{route="/x?ids=1,2"}"#, "/x?ids=1,2"),
        (r#"a{q="a=b"}"#, "a=b"),
        (r#"a{msg="say \"hi\""}"#, "say \"hi\""),
        (r#"a{msg='say "hi"'}"#, "say \"hi\""),
        (r#"a{msg='it\'s'}"#, "it's"),
        ("a{msg=`raw \\n {}`}", "raw \\n {}"),
        (r#"a{msg="line\nbreak\ttab\\"}"#, "line\nbreak\ttab\\"),
        (r#"a{city="Zürich 🚦"}"#, "Zürich 🚦"),
        (r#"a{city="Z\u00fcrich \U0001F6A6"}"#, "Zürich 🚦"),
        (r#"a{city="Z\xc3\xbcrich"}"#, "Zürich"),
        (r#"a{city="Z\303\274rich"}"#, "Zürich"),
        (r#"a{c="\a\b\f\v\r"}"#, "\u{7}\u{8}\u{c}\u{b}\r"),
        (r##"a{c="# not a comment"}"##, "# not a comment"),
    ];
    for (src, value) in cases {
        let s = sel(src);
        assert_eq!(s.matchers()[0].value(), *value, "{src}");
        let label = s.matchers()[0].label().to_owned();
        assert!(s.matches("a", &[(label.as_str(), *value)]), "{src}");
        assert!(!s.matches("a", &[(label.as_str(), "other")]), "{src}");
    }
    // Regex metacharacters from the exposition, escaped in the regex.
    let s = sel(r#"a{route=~"/users/\\{id\\}"}"#);
    assert!(s.matches("a", &[("route", "/users/{id}")]));
}

#[test]
fn syntax_variants() {
    let canonical = sel(r#"a{b="c", d!~"e"}"#);
    for src in [
        r#"a{b="c",d!~"e"}"#,
        r#"  a { b = "c" , d !~ "e" , }  "#,
        "a{\n  b=\"c\", # the first\n  d!~'e'\n}",
        r#"{__name__="a", b="c", d!~"e"}"#,
        r#"{b="c", __name__="a", d!~"e"}"#,
        r#"{"a", b="c", d!~"e"}"#,
        r#"{"a", "b"="c", d!~`e`}"#,
    ] {
        assert_eq!(sel(src), canonical, "{src}");
    }
    assert_eq!(sel("a:b:c").metric_name(), Some("a:b:c"));
    assert_eq!(sel(r#"{"my.metric"}"#).metric_name(), Some("my.metric"));
    assert_eq!(sel(r#"{__name__=~"a.*"}"#).metric_name(), None);
    let s = sel(r#"{"my.metric", "my.label"="x"}"#);
    assert!(s.matches("my.metric", &[("my.label", "x")]));
    assert_eq!(s.matchers()[0].op(), MatchOp::Equal);
}

#[test]
fn errors_say_what_and_where() {
    let cases: &[(&str, &str)] = &[
        (
            "",
            "expected a metric name or `{`, found the end at column 1",
        ),
        (
            "  ",
            "expected a metric name or `{`, found the end at column 3",
        ),
        ("9a", "expected a metric name or `{`, found `9` at column 1"),
        (
            r#"reqs_total{op "read"}"#,
            "expected `=`, `!=`, `=~` or `!~` after label `op`, found `\"` at column 15",
        ),
        (
            r#"a{op=="read"}"#,
            "expected a quoted string after `op=`, found `=` at column 6",
        ),
        (
            "a{op=read}",
            "expected a quoted string after `op=`, found `r` at column 6",
        ),
        (r#"a{op="read""#, "unclosed `{`: expected `}` at column 12"),
        (
            r#"a{op="read}"#,
            "unterminated string: missing closing `\"` at column 6",
        ),
        (
            "a{op=\"re\nad\"}",
            "unterminated string: missing closing `\"` at column 6",
        ),
        (
            "a{op=`read}",
            "unterminated string: missing closing ``` at column 6",
        ),
        (
            r#"a{op="read" x="y"}"#,
            "expected `,` or `}` after a matcher, found `x` at column 13",
        ),
        (
            "a{,}",
            "expected a label name or `}`, found `,` at column 3",
        ),
        (
            "a{9=\"x\"}",
            "expected a label name or `}`, found `9` at column 3",
        ),
        (r#"a{""="x"}"#, "empty label name at column 3"),
        (r#"{""}"#, "empty metric name at column 2"),
        (r#"a{op="\q"}"#, "unknown escape sequence `\\q` at column 7"),
        (r#"a{op="\'"}"#, "unknown escape sequence `\\'` at column 7"),
        (
            r#"a{op='\"'}"#,
            "unknown escape sequence `\\\"` at column 7",
        ),
        (
            r#"a{op="\x4"}"#,
            "escape `\\x` needs 2 hex digits at column 7",
        ),
        (
            r#"a{op="\u12"}"#,
            "escape `\\u` needs 4 hex digits at column 7",
        ),
        (
            r#"a{op="\ud800"}"#,
            "escape `\\ud800` is not a valid Unicode character at column 7",
        ),
        (
            r#"a{op="\400"}"#,
            "octal escape `\\400` is above 255 at column 7",
        ),
        (
            r#"a{op="\xff"}"#,
            "string is not valid UTF-8 once its `\\x` or octal escapes are decoded at column 6",
        ),
        (
            "a[5m]",
            "unexpected `[` after the selector: only a plain instant-vector selector is \
                 supported (no ranges, offsets, functions or operators) at column 2",
        ),
        ("sum(a)", "unexpected `(` after the selector"),
        ("a{b=\"c\"} offset 5m", "unexpected `o` after the selector"),
        ("a b", "unexpected `b` after the selector"),
    ];
    for (src, message) in cases {
        let error = bad(src);
        assert!(
            matches!(error, SelectorError::Syntax { .. }),
            "{src}: {error:?}"
        );
        let text = error.to_string();
        assert!(
            text.starts_with(message),
            "{src:?}:\n got {text}\nwant {message}"
        );
    }
}

#[test]
fn unbalanced_regex_cannot_escape_the_anchors() {
    for src in [r#"a{x=~"b)|(c"}"#, r#"a{x=~"b)|.*|(c"}"#, r#"a{x!~")"}"#] {
        assert!(matches!(bad(src), SelectorError::Regex { .. }), "{src}");
    }
}

#[test]
fn regex_errors_name_the_label() {
    let error = bad(r#"a{op=~"(read"}"#);
    let SelectorError::Regex { label, column, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!((label.as_str(), *column), ("op", 7));
    let text = error.to_string();
    assert!(
        text.starts_with("invalid regex for label `op` at column 7: "),
        "{text}"
    );
    assert!(!text.contains('\n'), "{text}");
}

#[test]
fn name_twice_and_match_everything_are_rejected() {
    assert_eq!(
        bad(r#"a{__name__="b"}"#),
        SelectorError::NameTwice {
            name: "a".into(),
            column: 3
        }
    );
    assert!(matches!(
        bad(r#"{"a", __name__=~"b"}"#),
        SelectorError::NameTwice { .. }
    ));
    for src in ["{}", r#"{a=""}"#, r#"{a=~".*"}"#, r#"{a!="x", b!~"y"}"#] {
        let error = bad(src);
        assert!(
            matches!(error, SelectorError::MatchesEverything(_)),
            "{src}"
        );
        assert!(
            error.to_string().contains("would match every series"),
            "{src}"
        );
    }
    // One matcher that rejects "" is enough.
    sel(r#"{a="", b="x"}"#);
    sel(r#"{a=~".+"}"#);
}

#[test]
fn display_is_canonical_and_round_trips() {
    let cases = [
        ("a", "a"),
        ("a{}", "a"),
        (r#"  a{b = 'c',}"#, r#"a{b="c"}"#),
        (r#"{__name__="a",b!="c"}"#, r#"a{b!="c"}"#),
        (r#"a{b=~"x|y",c!~`\d+`}"#, r#"a{b=~"x|y", c!~"\\d+"}"#),
        (
            r#"{"my.metric","my label"="v"}"#,
            r#"{"my.metric", "my label"="v"}"#,
        ),
        (
            r#"{__name__="a", __name__=~"a.*"}"#,
            r#"{__name__="a", __name__=~"a.*"}"#,
        ),
        (r#"{__name__=~"a.*"}"#, r#"{__name__=~"a.*"}"#),
        (r#"a{m="q\"\\\n\t\r\u0001"}"#, r#"a{m="q\"\\\n\t\r\u0001"}"#),
        (r#"a{m="日本 🚦"}"#, r#"a{m="日本 🚦"}"#),
    ];
    for (src, canonical) in cases {
        let parsed = sel(src);
        assert_eq!(parsed.to_string(), canonical, "{src}");
        assert_eq!(sel(canonical), parsed, "{src}");
    }
}

#[test]
fn sum_over_several_series() {
    let samples = [
        series("reqs", &[("op", "read"), ("result", "failure")], 3.0),
        series("reqs", &[("op", "write"), ("result", "failure")], 4.0),
        series("reqs", &[("op", "read"), ("result", "success")], 100.0),
        series("other", &[("result", "failure")], 1000.0),
    ];
    assert_eq!(sel(r#"reqs{result="failure"}"#).sum(&samples), Some(7.0));
    assert_eq!(sel("reqs").sum(&samples), Some(107.0));
    assert_eq!(sel(r#"{result="failure"}"#).sum(&samples), Some(1007.0));
    assert_eq!(
        sel(r#"reqs{op=~"read|write", result!="success"}"#).sum(&samples),
        Some(7.0)
    );
}

#[test]
fn no_match_is_none_not_zero() {
    let samples = [series("reqs", &[("result", "ok")], 0.0)];
    assert_eq!(sel("missing").sum(&samples), None);
    assert_eq!(sel(r#"reqs{result="failure"}"#).sum(&samples), None);
    assert_eq!(sel(r#"reqs{result="ok"}"#).sum(&samples), Some(0.0));
    assert_eq!(sel("reqs").sum(&[]), None);
}

#[test]
fn sum_many_in_one_pass() {
    let text = "# TYPE reqs counter\n\
                    reqs{op=\"read\",result=\"failure\",route=\"/users/{id}\"} 3\n\
                    reqs{op=\"write\",result=\"failure\",route=\"/x?a=1,2\"} 4\n\
                    reqs{op=\"read\",result=\"success\",msg=\"say \\\"hi\\\"\"} 100\n\
                    # EOF\n";
    let attempts = sel("reqs");
    let failures = sel(r#"reqs{result="failure"}"#);
    let templated = sel(r#"reqs{route="/users/{id}"}"#);
    let quoted = sel(r#"reqs{msg='say "hi"'}"#);
    let missing = sel("nope");
    let sums = sum_many(
        text,
        &[&attempts, &failures, &templated, &quoted, &missing],
        &Limits::default(),
    );
    assert_eq!(
        sums,
        Ok(vec![Some(107.0), Some(7.0), Some(3.0), Some(100.0), None])
    );

    let samples = exposition::parse(text, &Limits::default()).unwrap();
    assert_eq!(failures.sum(&samples), Some(7.0));
    assert!(failures.matches_sample(&samples[0]));

    assert_eq!(
        sum_many("reqs 1\nreqs{x=\"y} 2\n", &[&attempts], &Limits::default())
            .unwrap_err()
            .error_type(),
        "parse"
    );
    assert_eq!(
        sum_many("# nothing\n", &[&attempts], &Limits::default()),
        Err(ExpositionError::NoSamples)
    );
}

#[test]
fn serde_uses_the_text_form() {
    let s: Selector = serde_json::from_str(r#""reqs{result=\"failure\"}""#).unwrap();
    assert_eq!(s, sel(r#"reqs{result="failure"}"#));
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        r#""reqs{result=\"failure\"}""#
    );
    let error = serde_json::from_str::<Selector>(r#""reqs{""#).unwrap_err();
    assert!(error.to_string().contains("unclosed `{`"), "{error}");
}

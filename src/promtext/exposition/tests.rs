use super::escape::unescape;
use super::numbers::fast_decimal;
use super::scanner::find_quote_or_backslash;
use super::*;

fn ok(text: &str) -> Vec<Sample> {
    parse(text, &Limits::default()).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn err(text: &str) -> ExpositionError {
    match parse(text, &Limits::default()) {
        Ok(samples) => panic!("{text:?} parsed to {samples:?}"),
        Err(e) => e,
    }
}

fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
    Sample {
        name: name.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        value,
    }
}

/// Every case of PROMETHEUS-PARSE.md, where prometheus-parse drops or
/// mangles, must come out whole here.
#[test]
fn prometheus_parse_md_table() {
    assert_eq!(
        ok(r#"a{op="read",result="failure",route="/users/{id}"} 10"#),
        [sample(
            "a",
            &[
                ("op", "read"),
                ("result", "failure"),
                ("route", "/users/{id}")
            ],
            10.0
        )]
    );
    assert_eq!(
        ok(r#"a{ op = "read" } 10"#),
        [sample("a", &[("op", "read")], 10.0)]
    );
    assert_eq!(
        ok(r#"a{route="/x?ids=1,2",op="read",result="failure"} 10"#),
        [sample(
            "a",
            &[
                ("route", "/x?ids=1,2"),
                ("op", "read"),
                ("result", "failure")
            ],
            10.0
        )]
    );
    assert_eq!(
        ok(r#"a{op="read",q="a=b"} 10"#),
        [sample("a", &[("op", "read"), ("q", "a=b")], 10.0)]
    );
    assert_eq!(
        ok(r#"a{msg="say \"hi\""} 10"#),
        [sample("a", &[("msg", "say \"hi\"")], 10.0)]
    );
    let garbage = String::from_utf8_lossy(&[0x00, 0xff, 0xfe, 0x89, b'P', b'N', b'G', 0x0d, 0x0a]);
    assert_eq!(err(&garbage).error_type(), "parse");

    let openmetrics = "# TYPE f counter\n# HELP f Requests.\n# UNIT f requests\n\
                           f_total 17.0\nf_created 1.7e9\n# EOF\n";
    assert_eq!(
        ok(openmetrics),
        [
            sample("f_total", &[], 17.0),
            sample("f_created", &[], 1.7e9)
        ]
    );
    assert_eq!(
        ok("f_total{op=\"read\"} 3 # {trace_id=\"x\"} 1.0\n"),
        [sample("f_total", &[("op", "read")], 3.0)]
    );

    let values = ok("a NaN\nb +Inf\nc -Inf\nd 1.5e3\ne 2E-2\n");
    assert!(values[0].value.is_nan());
    assert_eq!(values[1].value, f64::INFINITY);
    assert_eq!(values[2].value, f64::NEG_INFINITY);
    assert_eq!(values[3].value, 1500.0);
    assert_eq!(values[4].value, 0.02);
    assert_eq!(
        ok("a{x=\"1\"} 1\r\nb 2\r\n"),
        [sample("a", &[("x", "1")], 1.0), sample("b", &[], 2.0)]
    );
    assert_eq!(
        ok("a{city=\"Zürich\",emoji=\"🚦\"} 1"),
        [sample("a", &[("city", "Zürich"), ("emoji", "🚦")], 1.0)]
    );
    assert_eq!(
        ok("a 1 1543182234000\nb{x=\"y\"} 2 1543182234.5"),
        [sample("a", &[], 1.0), sample("b", &[("x", "y")], 2.0)]
    );
}

#[test]
fn valid_lines() {
    let cases: &[(&str, Sample)] = &[
        ("a 1", sample("a", &[], 1.0)),
        ("a{} 1", sample("a", &[], 1.0)),
        ("a {} 1", sample("a", &[], 1.0)),
        ("a { } 1", sample("a", &[], 1.0)),
        ("a:b_c:d 1", sample("a:b_c:d", &[], 1.0)),
        ("_a 1", sample("_a", &[], 1.0)),
        (":a 1", sample(":a", &[], 1.0)),
        ("A9 1", sample("A9", &[], 1.0)),
        ("  a 1", sample("a", &[], 1.0)),
        ("\ta\t1\t", sample("a", &[], 1.0)),
        ("a 1   ", sample("a", &[], 1.0)),
        ("a    1", sample("a", &[], 1.0)),
        (r#"a{b="c",} 1"#, sample("a", &[("b", "c")], 1.0)),
        (
            r#"a{b="c" , d="e" ,} 1"#,
            sample("a", &[("b", "c"), ("d", "e")], 1.0),
        ),
        (r#"a{	b	=	"c"	} 1"#, sample("a", &[("b", "c")], 1.0)),
        (r#"a {b="c"} 1"#, sample("a", &[("b", "c")], 1.0)),
        (r#"a{b=""} 1"#, sample("a", &[("b", "")], 1.0)),
        (r#"a{b="{}"} 1"#, sample("a", &[("b", "{}")], 1.0)),
        (r#"a{b="}"} 1"#, sample("a", &[("b", "}")], 1.0)),
        (r#"a{b=","} 1"#, sample("a", &[("b", ",")], 1.0)),
        (r#"a{b="="} 1"#, sample("a", &[("b", "=")], 1.0)),
        (r##"a{b="# x"} 1"##, sample("a", &[("b", "# x")], 1.0)),
        (r#"a{b=" "} 1"#, sample("a", &[("b", " ")], 1.0)),
        (r#"a{b="\\"} 1"#, sample("a", &[("b", "\\")], 1.0)),
        (r#"a{b="\n"} 1"#, sample("a", &[("b", "\n")], 1.0)),
        (
            r#"a{b="\"\\\n\""} 1"#,
            sample("a", &[("b", "\"\\\n\"")], 1.0),
        ),
        (r#"a{b="x\\ny"} 1"#, sample("a", &[("b", "x\\ny")], 1.0)),
        (
            r#"a{b="c\"d",e="f"} 1"#,
            sample("a", &[("b", "c\"d"), ("e", "f")], 1.0),
        ),
        (r#"a{b="日本"} 1"#, sample("a", &[("b", "日本")], 1.0)),
        (r#"a{le="+Inf"} 1"#, sample("a", &[("le", "+Inf")], 1.0)),
        ("a 0", sample("a", &[], 0.0)),
        ("a -0", sample("a", &[], -0.0)),
        ("a -1.5", sample("a", &[], -1.5)),
        ("a +1.5", sample("a", &[], 1.5)),
        ("a .5", sample("a", &[], 0.5)),
        ("a 5.", sample("a", &[], 5.0)),
        ("a 1e308", sample("a", &[], 1e308)),
        ("a 1.7976931348623157e308", sample("a", &[], f64::MAX)),
        ("a 4.9e-324", sample("a", &[], 4.9e-324)),
        ("a 123456789012345", sample("a", &[], 123_456_789_012_345.0)),
        (
            "a 12345678901234567890",
            sample("a", &[], 1.2345678901234567e19),
        ),
        ("a 0.1", sample("a", &[], 0.1)),
        ("a 1234.56789012345", sample("a", &[], 1234.56789012345)),
        ("a 0.000000000000001", sample("a", &[], 1e-15)),
        ("a Inf", sample("a", &[], f64::INFINITY)),
        ("a inf", sample("a", &[], f64::INFINITY)),
        ("a 1 -5", sample("a", &[], 1.0)),
        ("a 1 1.5", sample("a", &[], 1.0)),
        ("a 1 # {} 2", sample("a", &[], 1.0)),
        ("a 1 123 # {x=\"y\"} 2 1.5", sample("a", &[], 1.0)),
        (
            "a_bucket{le=\"0.5\"} 1 # {trace_id=\"a{b}\"} 0.4",
            sample("a_bucket", &[("le", "0.5")], 1.0),
        ),
        (r#"{"my.metric"} 1"#, sample("my.metric", &[], 1.0)),
        (r#"{"my.metric",} 1"#, sample("my.metric", &[], 1.0)),
        (
            r#"{ "my.metric" , a="b" } 1"#,
            sample("my.metric", &[("a", "b")], 1.0),
        ),
        (
            r#"{"a\"b", "my.label"="v"} 1"#,
            sample("a\"b", &[("my.label", "v")], 1.0),
        ),
        (
            r#"a{"label with space"="v"} 1"#,
            sample("a", &[("label with space", "v")], 1.0),
        ),
    ];
    for (line, expected) in cases {
        let got = ok(line);
        assert_eq!(got.len(), 1, "{line:?}");
        let got = &got[0];
        assert_eq!(got.name, expected.name, "{line:?}");
        assert_eq!(got.labels, expected.labels, "{line:?}");
        assert_eq!(got.value.to_bits(), expected.value.to_bits(), "{line:?}");
    }
}

#[test]
fn invalid_lines() {
    // (input, 1-based line, 1-based column, part of the reason)
    let cases: &[(&str, usize, usize, &str)] = &[
        ("a", 1, 2, "missing sample value"),
        ("a ", 1, 3, "missing sample value"),
        ("a{}", 1, 4, "missing sample value"),
        (
            "a{b=\"c\"}1",
            1,
            9,
            "expected a space before the sample value",
        ),
        ("a x", 1, 3, "invalid sample value `x`"),
        ("a 1x", 1, 3, "invalid sample value `1x`"),
        ("a 0x10", 1, 3, "invalid sample value"),
        ("a 1,5", 1, 3, "invalid sample value"),
        ("a 1 x", 1, 5, "invalid timestamp `x`"),
        ("a 1 NaN", 1, 5, "invalid timestamp"),
        ("a 1 2 3", 1, 7, "unexpected `3` after the timestamp"),
        ("a 1 #", 1, 6, "expected an exemplar"),
        ("a 1 # x", 1, 7, "expected an exemplar"),
        ("a 1 # {x=\"y\"}", 1, 14, "missing exemplar value"),
        ("a 1 # {x=\"y\"} z", 1, 15, "invalid exemplar value"),
        ("a 1 # {x=y} 1", 1, 10, "expected `\"`"),
        (
            "a 1 # {x=\"y\"} 1 2 3",
            1,
            19,
            "unexpected `3` after the timestamp",
        ),
        ("1a 1", 1, 3, "expected a metric name"),
        ("a-b 1", 1, 2, "unexpected `-` after metric name `a`"),
        ("a.b 1", 1, 2, "quoted form"),
        ("é 1", 1, 1, "expected a metric name"),
        ("\u{fffd}\u{fffd}PNG", 1, 1, "expected a metric name"),
        ("<html>", 1, 1, "expected a metric name"),
        ("a{", 1, 3, "unterminated label set"),
        ("a{b", 1, 4, "expected `=` after label name `b`"),
        ("a{b=", 1, 5, "expected `\"` to open the value of label `b`"),
        (
            "a{b=c} 1",
            1,
            5,
            "expected `\"` to open the value of label `b`",
        ),
        ("a{b='c'} 1", 1, 5, "expected `\"`"),
        ("a{b=\"c} 1", 1, 5, "unterminated quoted label value"),
        ("a{b=\"c\\\"} 1", 1, 5, "unterminated quoted label value"),
        ("a{b=\"c\\", 1, 5, "unterminated quoted label value"),
        (
            "a{b=\"c\" d=\"e\"} 1",
            1,
            9,
            "expected `,` or `}` after the value of label `b`",
        ),
        ("a{b=\"c\"", 1, 8, "unterminated label set"),
        ("a{,} 1", 1, 3, "expected a label name or `}`"),
        ("a{b=\"c\",,} 1", 1, 9, "expected a label name or `}`"),
        ("a{1b=\"c\"} 1", 1, 3, "expected a label name"),
        ("a{b:c=\"d\"} 1", 1, 4, "expected `=` after label name `b`"),
        ("a{b==\"c\"} 1", 1, 5, "expected `\"`"),
        ("a{b=\"1\",b=\"2\"} 1", 1, 15, "duplicate label `b`"),
        ("a{__name__=\"b\"} 1", 1, 16, "`__name__` is not allowed"),
        ("a{\"\"=\"v\"} 1", 1, 3, "empty label name"),
        ("a{\"b\"} 1", 1, 6, "expected `=` after label name `b`"),
        ("{a=\"b\"} 1", 1, 1, "missing metric name"),
        ("{} 1", 1, 1, "missing metric name"),
        ("{\"\"} 1", 1, 2, "empty metric name"),
        ("{\"m\" 1", 1, 6, "expected `=` after label name `m`"),
        ("a}b 1", 1, 2, "unexpected `}`"),
        ("a 1\nb\n", 2, 2, "missing sample value"),
        (
            "# HELP a x\n\na 1\r\nb{c=\"\\x} 2\r\n",
            4,
            5,
            "unterminated quoted label value",
        ),
        ("a 1\n# EOF\nb 2\n", 3, 1, "content after `# EOF` on line 2"),
    ];
    for (text, line, column, reason) in cases {
        let error = err(text);
        let ExpositionError::Line {
            line: got_line,
            column: got_column,
            reason: got_reason,
        } = &error
        else {
            panic!("{text:?}: expected a line error, got {error}");
        };
        assert!(
            got_reason.contains(reason),
            "{text:?}: reason {got_reason:?} lacks {reason:?}"
        );
        assert_eq!((got_line, got_column), (line, column), "{text:?}: {error}");
        assert_eq!(error.error_type(), "parse");
        assert!(error
            .to_string()
            .starts_with(&format!("line {line}, column {column}: ")));
    }
}

#[test]
fn no_samples_is_an_error() {
    for text in [
        "",
        "\n\n",
        "  \r\n",
        "# HELP a x\n# TYPE a counter\n",
        "# EOF\n",
    ] {
        let error = err(text);
        assert_eq!(error, ExpositionError::NoSamples, "{text:?}");
        assert_eq!(error.error_type(), "no_samples");
    }
}

#[test]
fn too_many_samples() {
    let limits = Limits { max_samples: 2 };
    assert_eq!(parse("a 1\nb 2\n", &limits).map(|s| s.len()), Ok(2));
    let error = parse("a 1\nb 2\nc 3\n", &limits).unwrap_err();
    assert_eq!(error, ExpositionError::TooManySamples { max: 2 });
    assert_eq!(error.error_type(), "too_many_samples");
    assert_eq!(Limits::default().max_samples, 1_000_000);
}

#[test]
fn comments_and_blank_lines_are_skipped() {
    let text = "# HELP a The \"a\" {metric}.\n#TYPE a counter\n  # indented comment\n\n\
                    a 1\n#\n   \t\nb 2\n# EOF\n\n\r\n";
    assert_eq!(ok(text), [sample("a", &[], 1.0), sample("b", &[], 2.0)]);
}

#[test]
fn leading_byte_order_mark_is_skipped() {
    assert_eq!(ok("\u{feff}a 1\n"), [sample("a", &[], 1.0)]);
    // Only at the very start.
    assert_eq!(err("a 1\n\u{feff}b 2\n").error_type(), "parse");
}

#[test]
fn eof_needs_exact_form() {
    // `#EOF` is just a comment, so content after it still counts.
    assert_eq!(ok("#EOF\na 1").len(), 1);
    assert_eq!(ok("# EOF x\na 1").len(), 1);
    assert_eq!(ok("a 1\n# EOF  \n").len(), 1);
}

#[test]
fn many_labels_duplicate_is_found() {
    let mut line = String::from("a{");
    for i in 0..40 {
        line.push_str(&format!("l{i}=\"v\","));
    }
    line.push_str("l7=\"again\"} 1");
    let ExpositionError::Line { reason, .. } = err(&line) else {
        panic!("expected a line error");
    };
    assert!(reason.contains("duplicate label `l7`"), "{reason}");
}

#[test]
fn long_tokens_are_cut_in_errors() {
    let line = format!("a {}", "x".repeat(500));
    let message = err(&line).to_string();
    assert!(message.len() < 120, "{message}");
    assert!(message.contains("..."), "{message}");
}

#[test]
fn streaming_borrows_from_the_text_unless_escaped() {
    let text = "a{b=\"plain\"} 1 1000\n{\"q\\\"n\", b=\"esc\\\"aped\\n\", c=\"x\"} 2\n";
    let range = text.as_bytes().as_ptr_range();
    let borrowed = |s: &str| range.contains(&s.as_ptr());
    let mut seen = Vec::new();
    let count = for_each_sample(text, &Limits::default(), |sample| {
        seen.push(sample.to_sample());
        if sample.name == "a" {
            assert!(borrowed(sample.name) && borrowed(sample.labels[0].1));
            assert_eq!(sample.label("b"), Some("plain"));
            assert_eq!(sample.label("d"), None);
            assert_eq!(sample.timestamp, Some(1000.0));
        } else {
            assert_eq!(sample.name, "q\"n");
            assert!(!borrowed(sample.name) && !borrowed(sample.labels[0].1));
            assert_eq!(sample.label("b"), Some("esc\"aped\n"));
            assert_eq!(sample.label("c"), Some("x"));
            assert_eq!(sample.timestamp, None);
        }
    });
    assert_eq!(count, Ok(2));
    assert_eq!(seen.len(), 2);
}

#[test]
fn unescape_decodes_the_three_escapes() {
    assert!(matches!(unescape("plain"), Cow::Borrowed("plain")));
    assert_eq!(unescape(r#"a\\b\"c\nd"#), "a\\b\"c\nd");
    assert_eq!(unescape(r#"\\n"#), "\\n");
}

/// Issue 27 #6: label values read as Prometheus's `promparse.go` reads
/// them (its `lvalReplacer` decodes `\\`, `\"` and `\n` and keeps every
/// other backslash pair). Each of these lines failed the whole parse
/// before (`invalid escape`).
#[test]
fn unknown_escapes_keep_their_backslash_as_in_prometheus() {
    let cases: &[(&str, &str)] = &[
        (r#"a{p="C:\Users"} 1"#, r"C:\Users"),
        (r#"a{p="C:\\Users"} 1"#, r"C:\Users"),
        (r#"a{p="C:\Users\me\x.txt"} 1"#, r"C:\Users\me\x.txt"),
        (r#"a{p="\z"} 1"#, r"\z"),
        (r#"a{p="\f"} 1"#, r"\f"),
        (r#"a{p="\t"} 1"#, r"\t"),
        (r#"a{p="\u0041"} 1"#, r"\u0041"),
        (r#"a{p="\é"} 1"#, r"\é"),
        (r#"a{p="\\z"} 1"#, r"\z"),
        (r#"a{p="\\\z"} 1"#, r"\\z"),
        (r#"a{p="\\"} 1"#, "\\"),
        (r#"a{p="\""} 1"#, "\""),
        (r#"a{p="\n"} 1"#, "\n"),
        (r#"a{p="x\\ny"} 1"#, r"x\ny"),
        (r#"a{p="say \"hi\"\n"} 1"#, "say \"hi\"\n"),
    ];
    for (line, want) in cases {
        let got = ok(&format!("{line}\n"));
        assert_eq!(got.len(), 1, "{line}");
        assert_eq!(got[0].label("p"), Some(*want), "{line}");
        // What we read renders back to text that reads the same.
        let again = ok(&format!("{}\n", got[0]));
        assert_eq!(again[0].label("p"), Some(*want), "{line} -> {}", got[0]);
    }
    // A series no selector reads no longer fails the scrape.
    let text = "other_info{path=\"C:\\Users\",x=\"\\z\\f\"} 1\nreq_total 5\n";
    let sel: crate::promtext::selector::Selector = "req_total".parse().unwrap();
    let sums =
        crate::promtext::selector::sum_many(text, &[&sel], &Limits { max_samples: 100 }).unwrap();
    assert_eq!(sums, vec![Some(5.0)]);
}

#[test]
fn exemplar_labels_are_not_sample_labels() {
    let got = ok("a{x=\"1\"} 1 # {x=\"1\",trace=\"t\"} 1\n");
    assert_eq!(got, [sample("a", &[("x", "1")], 1.0)]);
}

#[test]
fn display_renders_parseable_lines() {
    let cases = [
        sample("a", &[], 1.0),
        sample("a", &[("b", "c\"d\\e\nf{},=")], -2.5),
        sample("my.metric", &[], f64::INFINITY),
        sample(
            "my metric",
            &[("my.label", "x"), ("ok", "")],
            f64::NEG_INFINITY,
        ),
        sample("a", &[("b", "c")], 1e300),
    ];
    for expected in cases {
        let line = expected.to_string();
        assert_eq!(ok(&line), [expected], "{line}");
    }
    assert_eq!(
        sample("a", &[("b", "c")], 1.0).to_string(),
        "a{b=\"c\"} 1.0"
    );
    assert_eq!(sample("a.b", &[], f64::NAN).to_string(), "{\"a.b\"} NaN");
    assert_eq!(sample("a", &[], f64::INFINITY).to_string(), "a +Inf");
}

#[test]
fn fast_decimal_agrees_with_std() {
    for token in [
        "0",
        "1",
        "10",
        "0.1",
        "0.3",
        "1.1",
        "123.456",
        "999999999999999",
        "99999999999999.9",
        "0.00000000000001",
        "7.",
        "000000000000001",
        "1234567890.12345",
    ] {
        assert_eq!(
            fast_decimal(token).map(f64::to_bits),
            token.parse::<f64>().ok().map(f64::to_bits),
            "{token}"
        );
    }
    for token in [
        "",
        ".",
        "0.000000000000001",
        "1..2",
        "1e5",
        "-1",
        "1234567890123456",
        "0.0000000000000001",
    ] {
        assert_eq!(fast_decimal(token), None, "{token}");
    }
}

#[test]
fn word_scan_agrees_with_naive_scan() {
    let naive = |bytes: &[u8]| bytes.iter().position(|&b| b == b'"' || b == b'\\');
    let alphabet: &[u8] = b"a\"\\\x00\x80\xff!#\x5b\x5d\x21\x23\x7f";
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for len in 0..40 {
        for _ in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let pick = (state % 4) as usize;
                    // Mostly plain bytes, so hits land at every offset.
                    if pick == 0 {
                        alphabet[(state >> 8) as usize % alphabet.len()]
                    } else {
                        b'x'
                    }
                })
                .collect();
            assert_eq!(find_quote_or_backslash(&bytes), naive(&bytes), "{bytes:?}");
        }
    }
}

#[test]
fn name_predicates() {
    assert!(is_metric_name("a:b_c9"));
    assert!(!is_metric_name("9a"));
    assert!(!is_metric_name(""));
    assert!(is_label_name("_a9"));
    assert!(!is_label_name("a:b"));
    assert!(!is_label_name(""));
}

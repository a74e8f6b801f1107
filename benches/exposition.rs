//! Exposition parsing: ours (`parse`, `for_each_sample`, `sum_many` with two
//! selectors) against `prometheus_parse::Scrape::parse`, on 1k, 10k and 100k
//! line expositions that both parse completely (no label values that
//! prometheus-parse would drop), so they do the same work.
//!
//! Run: `cargo bench --bench exposition -- --quick`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use throttle_governor::promtext::exposition::{for_each_sample, parse, Limits};
use throttle_governor::promtext::selector::{sum_many, Selector};

const OPS: [&str; 4] = ["read", "write", "list", "delete"];
const RESULTS: [&str; 3] = ["success", "failure", "timeout"];

/// A load tool's exposition of about `lines` lines: HELP and TYPE per family
/// of 48 series, request counters with four labels, some float gauges.
fn exposition(lines: usize) -> String {
    let mut text = String::with_capacity(lines * 90);
    let mut written = 0usize;
    let mut family = 0usize;
    while written < lines {
        let name = format!("loadtool_requests_{family}_total");
        text.push_str(&format!("# HELP {name} Requests attempted, by outcome.\n"));
        text.push_str(&format!("# TYPE {name} counter\n"));
        written += 2;
        for (i, op) in OPS.iter().enumerate() {
            for (j, result) in RESULTS.iter().enumerate() {
                for shard in 0..4 {
                    if written >= lines {
                        break;
                    }
                    let value = (family * 7919 + i * 104_729 + j * 1_299_709 + shard) % 10_000_000;
                    text.push_str(&format!(
                        "{name}{{op=\"{op}\",result=\"{result}\",route=\"/api/v1/items/:id\",shard=\"{shard}\"}} {value}\n"
                    ));
                    written += 1;
                }
            }
        }
        if written < lines {
            text.push_str(&format!(
                "loadtool_latency_seconds{{family=\"{family}\",quantile=\"0.99\"}} 0.{family:04}\n"
            ));
            written += 1;
        }
        family += 1;
    }
    text
}

fn prometheus_parse_count(text: &str) -> usize {
    prometheus_parse::Scrape::parse(text.lines().map(|line| Ok(line.to_owned())))
        .map(|scrape| scrape.samples.len())
        .unwrap_or(0)
}

fn bench(c: &mut Criterion) {
    let limits = Limits::default();
    let attempts: Selector = r#"{__name__=~"loadtool_requests_.*_total"}"#.parse().unwrap();
    let failures: Selector =
        r#"{__name__=~"loadtool_requests_.*_total", result=~"failure|timeout", op!="list"}"#
            .parse()
            .unwrap();
    let selectors = [&attempts, &failures];

    let mut group = c.benchmark_group("exposition");
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    group.sample_size(10);
    for lines in [1_000, 10_000, 100_000] {
        let text = exposition(lines);
        let ours = parse(&text, &limits).unwrap().len();
        assert_eq!(
            ours,
            prometheus_parse_count(&text),
            "both must parse everything"
        );
        group.throughput(Throughput::Elements(lines as u64));

        group.bench_with_input(BenchmarkId::new("ours_parse", lines), &text, |b, text| {
            b.iter(|| parse(black_box(text), &limits).unwrap().len())
        });
        group.bench_with_input(
            BenchmarkId::new("ours_for_each_sample", lines),
            &text,
            |b, text| {
                b.iter(|| {
                    let mut sum = 0.0;
                    for_each_sample(black_box(text), &limits, |s| sum += s.value).unwrap();
                    sum
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("ours_sum_many_2", lines),
            &text,
            |b, text| b.iter(|| sum_many(black_box(text), &selectors, &limits).unwrap()),
        );
        group.bench_with_input(
            BenchmarkId::new("prometheus_parse", lines),
            &text,
            |b, text| b.iter(|| prometheus_parse_count(black_box(text))),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! The target task's unit tests: phases, and the size of its futures.

use super::*;

#[test]
fn phases_are_stable_and_spread() {
    assert_eq!(phase_of("checkout"), phase_of("checkout"));
    let phases: Vec<f64> = (0..1000).map(|i| phase_of(&format!("t{i}"))).collect();
    assert!(phases.iter().all(|p| (0.0..1.0).contains(p)));
    for decile in 0..10 {
        let lo = f64::from(decile) / 10.0;
        let n = phases
            .iter()
            .filter(|p| (lo..lo + 0.1).contains(*p))
            .count();
        assert!(n > 50, "decile {decile}: {n}");
    }
}

mod size {
    //! Every target keeps its task's future and its writer's for as long
    //! as it runs, so their sizes are per-target memory (at 10,000 targets,
    //! each kilobyte is 10 MB). These bounds fail if a change puts a large
    //! state back inline (box it instead).
    use crate::control::Actuator;
    use crate::telemetry::export::Exporter;
    use std::future::Future;

    fn size_of_output<A, F: Future>(_: &dyn Fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn a_target_task_stays_small() {
        let run = |t: crate::engine::TargetTask| t.run(Default::default());
        let bytes = size_of_output(&run);
        assert!(bytes <= 6 * 1024, "a target's task future is {bytes} bytes");
    }

    #[test]
    fn a_writer_task_stays_small() {
        let writer = |(a, e): (Actuator, Exporter)| async move {
            let (_tx, rx) = tokio::sync::watch::channel(None);
            let clock = tokio::time::Instant::now();
            crate::engine::writer::writer_loop(
                a,
                e,
                None,
                rx,
                Default::default(),
                Default::default(),
                clock,
            )
            .await
        };
        let bytes = size_of_output(&writer);
        assert!(bytes <= 1536, "a writer's task future is {bytes} bytes");
    }
}

mod prebuilt {
    //! A push target's inbox takes pushes from the moment its task is
    //! built, not only once the task first runs (CI run 67: a push in that
    //! gap was answered 404).
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::config::Config;
    use crate::control::pull::PullBoard;
    use crate::engine::build::Builder;
    use crate::engine::RunOptions;
    use crate::signal::push::{PushError, PushMethod, PushStore};
    use crate::telemetry::Telemetry;

    const TARGET: &str = r#"
knob = "concurrency"
ceiling = 40
floor = 1
high = 0.05

[targets.signal]
kind = "push"
job = "{job}"
cumulative = false
attempts = 'attempts_total'
failures = 'failed_total'

[targets.control]
kind = "pull"
"#;

    fn config(toml: &str) -> Config {
        Config::parse(toml).unwrap()
    }

    fn builder(push: &Arc<PushStore>) -> (Builder, Arc<Telemetry>, PullBoard) {
        let tel = Arc::new(Telemetry::with_history(10));
        let board = PullBoard::default();
        let b = Builder::new(
            tel.clone(),
            push.clone(),
            board.clone(),
            RunOptions::default(),
        );
        (b.unwrap(), tel, board)
    }

    const PUSH: &str = "attempts_total 40\nfailed_total 3\n";

    #[tokio::test]
    async fn a_single_push_target_takes_pushes_before_its_task_runs() {
        let push = Arc::new(PushStore::default());
        let toml = format!(
            "[[targets]]\nname = \"t\"\n{}",
            TARGET.replace("{job}", "load")
        );
        let cfg = config(&toml);
        // No task: nobody reads the job.
        assert!(matches!(
            push.ingest(PushMethod::Post, "job/load", PUSH),
            Err(PushError::NoTarget(_))
        ));
        let task = builder(&push).0.task(&cfg.targets[0]).unwrap();
        assert_eq!(push.ingest(PushMethod::Post, "job/load", PUSH).unwrap(), 1);
        // The source the task will run with holds that push's counts.
        assert_eq!(task.prebuilt.len(), 1);
        let counters = task.prebuilt[0].1 .0.read().await.unwrap();
        assert_eq!((counters.first, counters.failures), (40.0, 3.0));
        drop(task);
        assert!(matches!(
            push.ingest(PushMethod::Post, "job/load", PUSH),
            Err(PushError::NoTarget(_))
        ));
    }

    #[tokio::test]
    async fn a_group_s_static_push_members_take_pushes_before_its_task_runs() {
        let push = Arc::new(PushStore::default());
        let toml = format!(
            "[[targets]]\nname = \"g\"\n{}\n[[targets.instances]]\nname = \"a\"\n\n[[targets.instances]]\nname = \"b\"\n",
            TARGET.replace("{job}", "{{name}}")
        );
        let cfg = config(&toml);
        let task = builder(&push).0.task(&cfg.targets[0]).unwrap();
        assert_eq!(push.ingest(PushMethod::Post, "job/a", PUSH).unwrap(), 1);
        assert_eq!(push.ingest(PushMethod::Post, "job/b", PUSH).unwrap(), 1);
        let names: Vec<&str> = task.prebuilt.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    /// The running task reads the inbox it was built with: the one push
    /// made before it ran is all it ever gets, and its reads find it and
    /// take their baseline (an inbox built again when the task ran would
    /// find nothing pushed).
    #[tokio::test]
    async fn the_running_task_reads_the_inbox_it_was_built_with() {
        let push = Arc::new(PushStore::default());
        let cfg = config(
            r#"
[[targets]]
name = "t"
knob = "concurrency"
ceiling = 40
floor = 1
high = 0.05
window = "100ms"

[targets.signal]
kind = "push"
job = "load"
cumulative = false
attempts = 'attempts_total'
failures = 'failed_total'
max_age = "1h"
group_ttl = "1h"

[targets.control]
kind = "pull"
stale_after = "1h"
"#,
        );
        let (builder, tel, board) = builder(&push);
        let task = builder.task(&cfg.targets[0]).unwrap();
        assert_eq!(push.ingest(PushMethod::Post, "job/load", PUSH).unwrap(), 1);
        let cancel = tokio_util::sync::CancellationToken::new();
        let running = tokio::spawn(task.run(cancel.clone()));
        let deadline = Instant::now() + Duration::from_secs(5);
        let read = loop {
            // A worker pulls the offer, so that its writes are confirmed.
            let _ = board.pull("t", None, "worker", Instant::now());
            if tel.status("t").is_some_and(|s| s.has_baseline) {
                break true;
            }
            if Instant::now() > deadline {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        cancel.cancel();
        let stopped = tokio::time::timeout(Duration::from_secs(5), running).await;
        assert!(read, "no read found the push: {:?}", tel.status("t"));
        assert!(stopped.is_ok(), "the task did not stop");
    }
}

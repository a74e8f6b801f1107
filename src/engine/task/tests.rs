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

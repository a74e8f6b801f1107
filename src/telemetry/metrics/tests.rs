//! The metrics' unit tests: the bounded vocabularies and the exposition.

use super::*;
use crate::control::ControlError;
use crate::governor::{HoldReason, Mode};
use crate::signal::SignalError;
use std::time::Duration;

#[test]
fn the_vocabularies_cover_every_variant() {
    let d = Duration::ZERO;
    for e in [
        SignalError::Timeout(d),
        SignalError::Connect(String::new()),
        SignalError::Status(500),
        SignalError::TooLarge(1),
        SignalError::Transport(String::new()),
        SignalError::MissingSeries(String::new()),
        SignalError::Format(String::new()),
        SignalError::Refused(String::new()),
        SignalError::Stale(String::new()),
    ] {
        assert!(SIGNAL_ERROR_TYPES.contains(&e.error_type()), "{e:?}");
    }
    for e in [
        ControlError::Timeout(d),
        ControlError::Connect(String::new()),
        ControlError::Transport(String::new()),
        ControlError::Config(String::new()),
        ControlError::Unsupported(String::new()),
    ] {
        assert!(CONTROL_ERROR_TYPES.contains(&e.error_type()), "{e:?}");
    }
    for m in [
        Mode::Climbing,
        Mode::Reclimbing,
        Mode::Probing,
        Mode::BackingOff,
    ] {
        assert!(
            DECISIONS.iter().any(|(_, mode, _)| *mode == m.as_str()),
            "{m:?}"
        );
    }
    for r in [
        HoldReason::NoTraffic,
        HoldReason::DeadBand,
        HoldReason::AtCeiling,
        HoldReason::AtFloor,
        HoldReason::Baseline,
        HoldReason::CounterReset,
        HoldReason::SignalError,
        HoldReason::Settling,
        HoldReason::Gathering,
        HoldReason::Dwelling,
        HoldReason::LatencyBand,
        HoldReason::NoLatency,
    ] {
        assert!(
            DECISIONS.iter().any(|(_, _, reason)| *reason == r.as_str()),
            "{r:?}"
        );
    }
}

//! The lab: what measures and demonstrates the controller, beside the
//! product. Nothing in the pipeline imports it.
//!
//! - [`sim`]: a simulated load tool and target models with known capacity;
//! - [`bench`](mod@bench): control quality, the governor against AIMD,
//!   CUBIC, a gradient, findmax and an oracle on the sim's models;
//! - [`replay`]: what-if analysis, recorded windows through the governor;
//! - [`demo`]: sim + controller + report in one process.

pub mod bench;
pub mod demo;
pub mod replay;
pub mod sim;

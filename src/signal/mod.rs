//! Signal: where counters come from.
//!
//! Every governor decision starts from a load tool's cumulative counters
//! (attempts, failures). This module reads them: parsing what a tool exposes
//! and selecting the series that count. It does no windowing and no deciding;
//! a reading that cannot be trusted is an error here, never a zero.
//!
//! - [`exposition`]: our own Prometheus / OpenMetrics text parser, which never
//!   drops a sample silently.
//! - [`selector`]: PromQL-style instant-vector selectors that sum matching
//!   series, several in one pass over a scrape.

pub mod exposition;
pub mod selector;

//! A minimal Goose load test for the live governor test.
//!
//! One scenario, one transaction: `GET /` in a loop with no wait, so the
//! concurrency the target sees equals the number of Goose users. Every
//! option comes from the command line (`--host`, `--users`,
//! `--websocket`, ...), which tests/real/goose.rs passes.

use goose::prelude::*;

async fn hit(user: &mut GooseUser) -> TransactionResult {
    // A 503 is recorded as a failed request (fail_count), which is the
    // signal; it is not an error of the load test itself.
    let _ = user.get("/").await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), GooseError> {
    GooseAttack::initialize()?
        .register_scenario(scenario!("Hit").register_transaction(transaction!(hit)))
        .execute()
        .await?;
    Ok(())
}

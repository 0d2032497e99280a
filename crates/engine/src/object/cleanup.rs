//! The end of an S3 run: [`finish_s3`] removes every object the run wrote (multi-object
//! DELETEs, single ones where the server has none), then the run's marker and the bucket
//! when the run made it. Only keys iolab named itself are deleted, never by listing.

use iolab_backend::object::{ObjectOp, ObjectRequest};
use iolab_comm::Comm;

use crate::object::plan::{ObjectPlan, Pool};
use crate::object::run::ObjectOutcome;
use crate::object::worker::ObjectFactory;

/// Keys a multi-object DELETE of the cleanup names at once (S3's most).
const CLEANUP_BATCH: usize = 1000;
/// Tries of each cleanup request, whatever the run's --attempts (warp's default): a
/// run ended by throttling still removes its objects.
pub const CLEANUP_ATTEMPTS: u32 = 10;

/// Removes what the run wrote (unless `keep`): every object in this rank's pools (with
/// multi-object DELETEs of up to 1000 keys, single DELETEs where the server has none),
/// then on rank 0 the marker and, when the run made it, the bucket. Returns warnings
/// about anything left. Collective; runs also after a failed or interrupted run.
pub fn finish_s3(
    comm: &dyn Comm,
    outcome: &ObjectOutcome,
    factory: ObjectFactory<'_>,
    keep: bool,
) -> Vec<String> {
    let plan = &outcome.plan;
    let mut warnings = Vec::new();
    let live: u64 = outcome.pools.iter().map(|p| p.live.len() as u64).sum();
    let total = comm.all_sum(live);
    if keep {
        if comm.rank() == 0 {
            warnings.push(format!(
                "--keep: {total} objects kept under s3://{}/{} (with its marker {})",
                plan.spec.bucket,
                plan.root,
                crate::object::plan::MARKER
            ));
        }
        return warnings;
    }
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = outcome
            .pools
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.live.is_empty())
            .map(|(i, pool)| {
                s.spawn(move || remove_pool(plan, plan.global(i as u32), pool, factory))
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| {
                h.join()
                    .unwrap_or_else(|_| Some("a cleanup thread panicked".into()))
            })
            .collect()
    });
    let left = comm.all_sum(failures.len() as u64);
    if comm.rank() == 0 {
        if left > 0 {
            warnings.push(format!(
                "could not remove all of the run's objects under s3://{}/{}: {}",
                plan.spec.bucket,
                plan.root,
                failures
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "on another rank".into())
            ));
            return warnings;
        }
        if let Ok(mut b) = factory(0) {
            b.at_least_attempts(CLEANUP_ATTEMPTS);
            let marker = plan.marker();
            let r = b.run(ObjectRequest {
                op: ObjectOp::Delete,
                key: &marker,
                tag: 0,
            });
            if let Some(e) = r.error {
                warnings.push(format!("could not remove the run's marker: {e}"));
            } else if outcome.made_bucket {
                let r = b.run(ObjectRequest {
                    op: ObjectOp::DeleteBucket,
                    key: "",
                    tag: 0,
                });
                if let Some(e) = r.error {
                    warnings.push(format!(
                        "bucket '{}' (made by this run) was left: {e}",
                        plan.spec.bucket
                    ));
                }
            }
        }
    }
    warnings
}

/// The end of a run whose objects were all removed as it went (the KV cache's tier):
/// the run's marker, and the bucket when the run made it; warnings about anything left.
/// Collective.
pub fn release_bucket(
    comm: &dyn Comm,
    plan: &ObjectPlan,
    made_bucket: bool,
    factory: ObjectFactory<'_>,
) -> Vec<String> {
    let outcome = ObjectOutcome {
        phases: Vec::new(),
        plan: plan.clone(),
        pools: Vec::new(),
        made_bucket,
        stopped: false,
    };
    finish_s3(comm, &outcome, factory, false)
}

/// Deletes one worker's objects; None when all are gone.
fn remove_pool(
    plan: &ObjectPlan,
    g: u32,
    pool: &Pool,
    factory: ObjectFactory<'_>,
) -> Option<String> {
    let mut b = match factory(g) {
        Ok(b) => b,
        Err(e) => return Some(e.to_string()),
    };
    b.at_least_attempts(CLEANUP_ATTEMPTS);
    let keys: Vec<String> = pool
        .live
        .iter()
        .map(|&n| {
            let mut k = String::new();
            plan.key_into(g, n, &mut k);
            k
        })
        .collect();
    let mut single = false;
    for chunk in keys.chunks(CLEANUP_BATCH) {
        if !single {
            let r = b.run(ObjectRequest {
                op: ObjectOp::DeleteMany { keys: chunk },
                key: "",
                tag: 0,
            });
            match r.error {
                None => continue,
                Some(e) if matches!(e.status(), Some(400 | 405 | 501)) => single = true,
                Some(e) => return Some(e.to_string()),
            }
        }
        for k in chunk {
            let r = b.run(ObjectRequest {
                op: ObjectOp::Delete,
                key: k,
                tag: 0,
            });
            if let Some(e) = r.error
                && e.status() != Some(404)
            {
                return Some(e.to_string());
            }
        }
    }
    None
}

//! The run rollup as a pure function of a run's spans and its previous rollup. Decisions call
//! it on the spans as they will stand after the command's events, and record the result in a
//! `run.rolled_up` event (`run.rolled_up_while_open` for a rollup on request of an open run);
//! `apply` only stores what was recorded.

use super::events::{BillingMode, SpanOrigin, SpanOutcome, SpanUsage};
use super::query::{FrozenCosts, OpenRunRollup, RunRollup, Span};

/// The reason a rollup carries when its root was interrupted and no span said why it failed.
pub(crate) const INTERRUPTED_REASON: &str = "interrupted";

/// The rollup of a run whose spans (in start order) are `spans`, merged with the `frozen` cost
/// fields of its earlier rollup; `None` while the root is open or the run has no span.
pub(crate) fn compute(spans: &[Span], frozen: Option<FrozenCosts>) -> Option<RunRollup> {
    let root = root(spans)?;
    let (outcome, ended_at_ms) = (root.outcome?, root.ended_at_ms?);
    Some(so_far(spans, frozen)?.closed(outcome, ended_at_ms))
}

/// The run's root: its parentless span, else its first (the reference's fallback).
fn root(spans: &[Span]) -> Option<&Span> {
    spans.iter().find(|s| s.is_root()).or(spans.first())
}

/// The rollup of a run as its spans stand, its root open or not, merged with the `frozen`
/// cost fields of its earlier rollup; `None` when the run has no span.
pub(crate) fn so_far(spans: &[Span], frozen: Option<FrozenCosts>) -> Option<OpenRunRollup> {
    let root = root(spans)?;
    let children = || spans.iter().filter(|s| s.span != root.span);
    let total = |field: fn(&SpanUsage) -> Option<u64>| -> Option<u64> {
        field(&root.usage).or_else(|| match root.origin {
            SpanOrigin::Cron => children()
                .filter_map(|s| field(&s.usage))
                .reduce(u64::saturating_add),
            SpanOrigin::Session => None,
        })
    };
    let failure_reason = spans
        .iter()
        .filter(|s| matches!(s.outcome, Some(SpanOutcome::Error | SpanOutcome::Timeout)))
        .find_map(|s| s.outcome_reason.clone())
        .or_else(|| {
            (root.outcome == Some(SpanOutcome::Interrupted)).then(|| INTERRUPTED_REASON.to_owned())
        });
    let cost_micro_usd = total(|u| u.cost_micro_usd);
    let billing_mode = root.billing_mode;
    let effective_cost_micro_usd = match billing_mode {
        None => None,
        Some(BillingMode::Subscription) => Some(0),
        Some(BillingMode::Api) => cost_micro_usd,
    };
    let mut rollup = OpenRunRollup {
        run: root.run.clone(),
        origin: root.origin,
        name: root.name.clone(),
        session_id: root.session_id.clone(),
        job_name: root.job_name.clone(),
        started_at_ms: root.started_at_ms,
        span_count: spans.len() as u64,
        input_tokens: total(|u| u.input_tokens),
        output_tokens: total(|u| u.output_tokens),
        cache_read_tokens: total(|u| u.cache_read_tokens),
        cache_creation_tokens: total(|u| u.cache_creation_tokens),
        cost_micro_usd,
        effective_cost_micro_usd,
        billing_mode,
        failure_reason,
    };
    if let Some(frozen) = frozen {
        freeze_costs(&mut rollup, frozen);
    }
    Some(rollup)
}

/// Keeps every cost field `frozen` already had: a later rollup only fills a slot still
/// empty, and fills the effective cost only under the classification already frozen, so no
/// number computed under one billing mode lands on a row classified under another.
fn freeze_costs(rollup: &mut OpenRunRollup, frozen: FrozenCosts) {
    rollup.cost_micro_usd = frozen.cost_micro_usd.or(rollup.cost_micro_usd);
    let same_classification =
        frozen.billing_mode.is_none() || frozen.billing_mode == rollup.billing_mode;
    rollup.effective_cost_micro_usd = match frozen.effective_cost_micro_usd {
        Some(kept) => Some(kept),
        None if same_classification => rollup.effective_cost_micro_usd,
        None => None,
    };
    rollup.billing_mode = frozen.billing_mode.or(rollup.billing_mode);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollup(billing_mode: Option<BillingMode>, effective: Option<u64>) -> OpenRunRollup {
        OpenRunRollup {
            run: "r1".into(),
            origin: SpanOrigin::Session,
            name: "run".into(),
            session_id: None,
            job_name: None,
            started_at_ms: 0,
            span_count: 1,
            input_tokens: None,
            output_tokens: None,
            cache_read_tokens: None,
            cache_creation_tokens: None,
            cost_micro_usd: effective,
            effective_cost_micro_usd: effective,
            billing_mode,
            failure_reason: None,
        }
    }

    #[test]
    fn an_empty_effective_cost_is_not_filled_under_another_billing_mode() {
        let previous = rollup(Some(BillingMode::Api), None);
        let mut later = rollup(Some(BillingMode::Subscription), Some(0));
        freeze_costs(&mut later, FrozenCosts::from(&previous));
        assert_eq!(later.effective_cost_micro_usd, None);
        assert_eq!(later.billing_mode, Some(BillingMode::Api));
        assert_eq!(
            later.cost_micro_usd,
            Some(0),
            "the reported cost was still empty"
        );
    }

    #[test]
    fn an_empty_effective_cost_is_filled_under_the_same_or_no_billing_mode() {
        for frozen in [None, Some(BillingMode::Api)] {
            let mut later = rollup(Some(BillingMode::Api), Some(7));
            freeze_costs(&mut later, FrozenCosts::from(&rollup(frozen, None)));
            assert_eq!(later.effective_cost_micro_usd, Some(7));
        }
    }

    #[test]
    fn a_frozen_effective_cost_is_kept() {
        let mut later = rollup(Some(BillingMode::Api), Some(9));
        freeze_costs(
            &mut later,
            FrozenCosts::from(&rollup(Some(BillingMode::Api), Some(3))),
        );
        assert_eq!(later.effective_cost_micro_usd, Some(3));
        assert_eq!(later.cost_micro_usd, Some(3));
    }
}

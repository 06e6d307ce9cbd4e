//! Average ranks with tie bookkeeping, shared by the rank-based tests.
//!
//! Hand-written rather than statrs' `OrderStatistics::ranks(RankTieBreaker::Average)` because
//! the tests also need the sizes of the tie groups (for their tie corrections), which statrs
//! does not return, and this gets both from one sort.

/// Average ranks (1-based, ties get the mean of the ranks they span, like
/// `scipy.stats.rankdata(method="average")`) of `xs`, and the sizes of every tie group of
/// size > 1. NaN must have been removed by the caller.
pub(crate) fn average_ranks(xs: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let n = xs.len();
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_unstable_by(|&i, &j| xs[i].total_cmp(&xs[j]));
    let mut ranks = vec![0.0; n];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        // `==` rather than total_cmp so that -0.0 and +0.0 tie, as in scipy.
        while j < n && xs[idx[j]] == xs[idx[i]] {
            j += 1;
        }
        // Positions i..j (0-based) share ranks i+1..=j; their mean is (i + 1 + j) / 2.
        let r = (i + 1 + j) as f64 / 2.0;
        for &k in &idx[i..j] {
            ranks[k] = r;
        }
        if j - i > 1 {
            ties.push(j - i);
        }
        i = j;
    }
    (ranks, ties)
}

/// `Σ (t³ − t)` over tie-group sizes `t`, as f64.
pub(crate) fn tie_term(ties: &[usize]) -> f64 {
    ties.iter()
        .map(|&t| {
            let t = t as f64;
            t * t * t - t
        })
        .sum()
}

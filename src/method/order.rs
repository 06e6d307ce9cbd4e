//! The order of the programs (or commands) inside each round, for `tare kernels` and
//! `tare run`'s interleaved rounds: counterbalanced, not only shuffled.
//!
//! A fresh shuffle every round makes a position's effect (the first process of a round runs
//! after the stop rule's arithmetic and the result files, a later one right after another
//! process; a machine that slows within a round) noise *on average over sessions*, but one
//! session's orders are what they are: with seed 26, 3 programs of 5 kernels and 10 rounds (a
//! head-to-head test's session), program 0 ran before program 1 in 8 of the 10 rounds and
//! program 1 last in 6. A position effect then
//! becomes a difference between two identical programs in that session, and the paired test,
//! which sees only that session's rounds, takes it for one.
//!
//! So rounds come in blocks of k (the number of programs): each block a random Latin square
//! (a random permutation of the programs written cyclically, its rows in a random order), so
//! within a block every program takes every position exactly once, and a session of whole
//! blocks gives every program the same positions. Which program precedes which (carry-over)
//! is balanced only on average, as before.

use rand::seq::SliceRandom;
use rand::Rng;

/// The orders of successive rounds over `k` programs (indices `0..k`).
#[derive(Debug, Clone)]
pub struct Rounds {
    k: usize,
    /// Orders left in the current block, last one next.
    block: Vec<Vec<usize>>,
}

impl Rounds {
    pub fn new(k: usize) -> Rounds {
        Rounds {
            k,
            block: Vec::new(),
        }
    }

    /// The order of the next round: a row of the current block, starting a new block after
    /// every k rounds.
    pub fn next(&mut self, rng: &mut impl Rng) -> Vec<usize> {
        if self.block.is_empty() {
            let mut programs: Vec<usize> = (0..self.k).collect();
            programs.shuffle(rng);
            self.block = (0..self.k)
                .map(|r| (0..self.k).map(|j| programs[(r + j) % self.k]).collect())
                .collect();
            self.block.shuffle(rng);
        }
        self.block.pop().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// positions[p][i]: rounds in which program p ran at position i.
    fn positions(k: usize, rounds: usize, seed: u64) -> Vec<Vec<usize>> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut r = Rounds::new(k);
        let mut pos = vec![vec![0; k]; k];
        for _ in 0..rounds {
            let order = r.next(&mut rng);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..k).collect::<Vec<_>>(), "{order:?}");
            for (i, &p) in order.iter().enumerate() {
                pos[p][i] += 1;
            }
        }
        pos
    }

    #[test]
    fn whole_blocks_give_every_program_every_position_equally() {
        for k in 1..=5 {
            for seed in 0..50 {
                let pos = positions(k, 4 * k, seed);
                assert!(
                    pos.iter().flatten().all(|&n| n == 4),
                    "k {k} seed {seed}: {pos:?}"
                );
            }
        }
    }

    #[test]
    fn a_block_cut_short_is_off_by_at_most_one() {
        for seed in 0..50 {
            let pos = positions(3, 10, seed);
            assert!(pos.iter().flatten().all(|&n| n == 3 || n == 4), "{pos:?}");
        }
    }

    #[test]
    fn orders_still_vary_between_blocks_and_seeds() {
        // Not one fixed square: over many blocks of 3, more than one first round and more
        // than one square turn up.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut r = Rounds::new(3);
        let blocks: std::collections::BTreeSet<Vec<Vec<usize>>> = (0..40)
            .map(|_| (0..3).map(|_| r.next(&mut rng)).collect())
            .collect();
        assert!(blocks.len() > 4, "{blocks:?}");
        let two = |seed| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut r = Rounds::new(2);
            (0..20).map(|_| r.next(&mut rng)[0]).collect::<Vec<_>>()
        };
        assert_ne!(two(1), two(2));
    }
}

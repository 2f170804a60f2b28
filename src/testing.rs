//! What unit tests share: a seeded random source, so texts made at random are the same on
//! every run and a failure shows again on the next.

/// xorshift64 from `seed` (not zero): a new number each call, one sequence for one seed.
pub fn random(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

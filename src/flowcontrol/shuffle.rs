//! Shuffle sharding: a flow's hash picks a hand of distinct queues out of
//! a level's deck, the same hand every time, so flows rarely share a
//! whole hand and one flow's backlog cannot fill every queue.

use sha2::{Digest, Sha256};

/// The flow's hash: the first 8 bytes, little-endian, of SHA-256 over the
/// schema's name, a zero byte and the distinguisher (kube's, so a flow
/// lands in the same hand on either server).
pub fn flow_hash(schema: &str, distinguisher: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(schema.as_bytes());
    h.update([0u8]);
    h.update(distinguisher.as_bytes());
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// `hand` distinct cards out of `deck`, drawn from `hash` as a mixed-radix
/// number (one digit per draw, each over the cards still in the deck).
/// A hand larger than the deck is the whole deck.
pub fn deal(mut hash: u64, deck: usize, hand: usize) -> Vec<usize> {
    let hand = hand.clamp(1, deck.max(1));
    let deck = deck.max(1);
    let mut draws = Vec::with_capacity(hand);
    for i in 0..hand {
        let left = (deck - i) as u64;
        draws.push((hash % left) as usize);
        hash /= left;
    }
    // Each draw indexes the cards not yet dealt: shift it past every
    // earlier card at or below it.
    let mut cards: Vec<usize> = Vec::with_capacity(hand);
    for (i, &d) in draws.iter().enumerate() {
        let mut card = d;
        for j in (1..=i).rev() {
            if card >= draws[j - 1] {
                card += 1;
            }
        }
        cards.push(card);
    }
    cards
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn hands_are_distinct_cards_of_the_deck(hash: u64, deck in 1usize..200, hand in 1usize..8) {
            let cards = deal(hash, deck, hand);
            prop_assert_eq!(cards.len(), hand.min(deck));
            let mut sorted = cards.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), cards.len());
            prop_assert!(cards.iter().all(|c| *c < deck));
        }
    }

    #[test]
    fn the_same_flow_gets_the_same_hand() {
        let h = flow_hash("global-default", "alice");
        assert_eq!(deal(h, 128, 6), deal(h, 128, 6));
        assert_ne!(h, flow_hash("global-default", "bob"));
        assert_ne!(h, flow_hash("global-defaultalice", ""));
    }
}

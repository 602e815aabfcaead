//! Shuffle sharding: a flow's hash picks a hand of distinct queues out of
//! a level's deck, the same hand every time, so flows rarely share a
//! whole hand and one flow's backlog cannot fill every queue.

use xxhash_rust::xxh3::Xxh3;

/// The largest hand dealt: kube's validation keeps a hand's entropy
/// (hand size × log2 of the queues) within 60 bits, which no hand over 15
/// cards passes.
pub const MAX_HAND: usize = 16;

/// The flow's hash, over the schema's name, a zero byte and the
/// distinguisher. kube takes SHA-256 of the same bytes; which queues a
/// flow's hand holds is internal to one server, so a hash a hundred times
/// cheaper serves as well.
pub fn flow_hash(schema: &str, distinguisher: &str) -> u64 {
    let mut h = Xxh3::new();
    h.update(schema.as_bytes());
    h.update(&[0u8]);
    h.update(distinguisher.as_bytes());
    h.digest()
}

/// A dealt hand, kept on the stack (one is dealt per queued request).
pub struct Hand {
    cards: [usize; MAX_HAND],
    len: usize,
}

impl std::ops::Deref for Hand {
    type Target = [usize];

    fn deref(&self) -> &[usize] {
        &self.cards[..self.len]
    }
}

/// `hand` distinct cards out of `deck`, drawn from `hash` as a mixed-radix
/// number (one digit per draw, each over the cards still in the deck).
/// A hand larger than the deck is the whole deck.
pub fn deal(mut hash: u64, deck: usize, hand: usize) -> Hand {
    let deck = deck.max(1);
    let len = hand.clamp(1, deck.min(MAX_HAND));
    let mut draws = [0usize; MAX_HAND];
    for (i, d) in draws.iter_mut().enumerate().take(len) {
        let left = (deck - i) as u64;
        *d = (hash % left) as usize;
        hash /= left;
    }
    // Each draw indexes the cards not yet dealt: shift it past every
    // earlier card at or below it.
    let mut cards = [0usize; MAX_HAND];
    for i in 0..len {
        let mut card = draws[i];
        for j in (1..=i).rev() {
            if card >= draws[j - 1] {
                card += 1;
            }
        }
        cards[i] = card;
    }
    Hand { cards, len }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn hands_are_distinct_cards_of_the_deck(hash: u64, deck in 1usize..200, hand in 1usize..8) {
            let cards = deal(hash, deck, hand).to_vec();
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
        assert_eq!(*deal(h, 128, 6), *deal(h, 128, 6));
        assert_ne!(h, flow_hash("global-default", "bob"));
        assert_ne!(h, flow_hash("global-defaultalice", ""));
    }
}

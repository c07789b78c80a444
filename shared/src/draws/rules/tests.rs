use rand::rngs::StdRng;
use rand::SeedableRng;

use super::*;

const SEED: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// The draw of `SEED` among `n` entrants `u0..` for `count` shares, revealed.
fn drawn(n: usize, count: usize) -> (Reveal, Vec<String>) {
    let users: Vec<String> = (0..n).map(|i| format!("u{i}")).collect();
    let refs: Vec<&str> = users.iter().map(String::as_str).collect();
    let won = winners(SEED, &refs, count).unwrap();
    let reveal = Reveal {
        commitment: commitment(SEED),
        seed: SEED.into(),
        entrants: n as u64,
        winners: won.len() as u64,
        threshold: won.last().map(|(t, _)| t.clone()),
    };
    (reveal, won.into_iter().map(|(_, u)| u).collect())
}

#[test]
fn the_rule_is_the_published_one() {
    // Fixed vectors, computed independently with Python's hashlib and hmac (the lines in this
    // module's documentation): a change to the rule changes them.
    assert_eq!(
        commitment(SEED),
        "65873c4b3b5898436045247b0b1c5d776e9c4a2ca485362a3e68ab865c22540f"
    );
    assert_eq!(
        ticket(SEED, "alice").unwrap(),
        "6eefad2bed97b6d93ee663d67a44b46016b3d79dcad54ada39b61a1d14874d1b"
    );
}

#[test]
fn tickets_are_64_hex_digits_and_need_a_well_formed_seed() {
    let t = ticket(SEED, "alice").unwrap();
    assert!(is_digest_hex(&t), "{t}");
    assert_ne!(t, ticket(SEED, "bob").unwrap());
    assert_eq!(ticket("abc", "alice"), None);
    assert_eq!(ticket(&SEED.to_uppercase(), "alice"), None);
    let fresh = new_seed(&mut StdRng::seed_from_u64(7));
    assert!(is_digest_hex(&fresh) && ticket(&fresh, "alice").is_some());
}

#[test]
fn the_smallest_tickets_win_in_ticket_order_and_everyone_wins_when_few_enter() {
    let (reveal, won) = drawn(1_000, 100);
    let refs: Vec<&str> = won.iter().map(String::as_str).collect();
    assert_eq!(reveal.check_winners(&refs), Ok(()));
    assert_eq!(won.len(), 100);
    let (few, all) = drawn(3, 100);
    assert_eq!((few.winners, all.len()), (3, 3));
    let (nobody, none) = drawn(0, 100);
    assert_eq!((nobody.threshold, none.len()), (None, 0));
    // Entering twice changes nothing.
    let twice = winners(SEED, &["u1", "u1", "u2"], 5).unwrap();
    assert_eq!(twice.len(), 2);
}

#[test]
fn every_entrant_checks_their_result() {
    let (reveal, won) = drawn(200, 20);
    for i in 0..200 {
        let user = format!("u{i}");
        let t = ticket(SEED, &user).unwrap();
        assert_eq!(reveal.check_entrant(&user, &t, won.contains(&user)), Ok(()));
        // A result reported the other way round fails.
        assert_eq!(
            reveal.check_entrant(&user, &t, !won.contains(&user)),
            Err(Mismatch::Threshold)
        );
    }
}

#[test]
fn the_commitment_binds_the_seed_the_entrants_and_the_order() {
    let (reveal, won) = drawn(500, 50);
    let refs: Vec<&str> = won.iter().map(String::as_str).collect();
    // Another seed: the commitment no longer matches.
    let other = Reveal {
        seed: SEED.replace('0', "1"),
        ..reveal.clone()
    };
    assert_eq!(other.check_winners(&refs), Err(Mismatch::Commitment));
    let t = ticket(SEED, "u1").unwrap();
    assert_eq!(
        other.check_entrant("u1", &t, false),
        Err(Mismatch::Commitment)
    );
    // A winner swapped for someone else, or two winners swapped: the order breaks.
    let mut swapped = refs.clone();
    swapped[3] = "mallory";
    assert_eq!(reveal.check_winners(&swapped), Err(Mismatch::Order));
    let mut reordered = refs.clone();
    reordered.swap(0, 1);
    assert_eq!(reveal.check_winners(&reordered), Err(Mismatch::Order));
    // A ticket that is not the seed's.
    let t = ticket(SEED, "u2").unwrap();
    assert_eq!(reveal.check_entrant("u1", &t, false), Err(Mismatch::Ticket));
}

#[test]
fn arriving_first_gives_no_edge() {
    // 200 draws (fresh seeds) of 100 shares among 1,000 entrants in arrival order: how often
    // the first 100 and the last 100 to arrive win. Each is Binomial(20,000, 0.1) under the
    // rule (mean 2,000, sd 42.4); their difference has sd 60 (ignoring the small negative
    // correlation), so |difference| > 300 (5 sd) would reject "no edge" at p < 1e-6.
    let mut rng = StdRng::seed_from_u64(46);
    let users: Vec<String> = (0..1_000).map(|i| format!("entrant-{i}")).collect();
    let refs: Vec<&str> = users.iter().map(String::as_str).collect();
    let (mut first, mut last) = (0i64, 0i64);
    for _ in 0..200 {
        let seed = new_seed(&mut rng);
        for (_, u) in winners(&seed, &refs, 100).unwrap() {
            let i: usize = u["entrant-".len()..].parse().unwrap();
            first += i64::from(i < 100);
            last += i64::from(i >= 900);
        }
    }
    assert!((first - last).abs() <= 300, "first {first}, last {last}");
    assert!((first - 2_000).abs() <= 250 && (last - 2_000).abs() <= 250);
}

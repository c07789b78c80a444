//! Unit tests of the split algorithms: edge cases, errors, overflow, the exact expectation of
//! the double-mean rule for small packets (rational arithmetic), Floyd's two samplers and the
//! wire names. Property and statistical tests are in `shared/tests/split_props.rs`.

use super::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

fn rng() -> StdRng {
    StdRng::seed_from_u64(0x6b6f_6e67_6261_6f21)
}

fn lucky_splits(total: i64, count: u32) -> Vec<Vec<i64>> {
    let mut r = rng();
    vec![
        double_mean(total, count, &mut r).unwrap(),
        line_cut(total, count, &mut r).unwrap(),
        split(total, count, Mode::Lucky, LuckySplit::DoubleMean, &mut r).unwrap(),
        split(total, count, Mode::Lucky, LuckySplit::LineCut, &mut r).unwrap(),
    ]
}

#[test]
fn count_one_gets_everything() {
    for total in [1, 2, 999, 1_000_000_000, i64::MAX] {
        for s in lucky_splits(total, 1) {
            assert_eq!(s, vec![total]);
        }
        assert_eq!(fixed(total, 1).unwrap(), vec![total]);
    }
}

#[test]
fn total_equal_count_is_all_ones() {
    for count in [1u32, 2, 3, 10, 10_000] {
        let total = i64::from(count);
        for s in lucky_splits(total, count) {
            assert_eq!(s, vec![1; count as usize]);
        }
        assert_eq!(fixed(total, count).unwrap(), vec![1; count as usize]);
    }
}

#[test]
fn two_shares_of_three_cents() {
    // Both lucky rules must be able to produce 1+2 and 2+1 only.
    let mut r = rng();
    let mut seen_dm = BTreeSet::new();
    let mut seen_lc = BTreeSet::new();
    for _ in 0..200 {
        seen_dm.insert(double_mean(3, 2, &mut r).unwrap());
        seen_lc.insert(line_cut(3, 2, &mut r).unwrap());
    }
    let want: BTreeSet<Vec<i64>> = [vec![1, 2], vec![2, 1]].into();
    assert_eq!(seen_dm, want);
    assert_eq!(seen_lc, want);
}

#[test]
fn zero_count_is_an_error() {
    let mut r = rng();
    assert_eq!(fixed(100, 0), Err(SplitError::ZeroCount));
    assert_eq!(double_mean(100, 0, &mut r), Err(SplitError::ZeroCount));
    assert_eq!(line_cut(100, 0, &mut r), Err(SplitError::ZeroCount));
    assert_eq!(
        split(0, 0, Mode::Lucky, LuckySplit::LineCut, &mut r),
        Err(SplitError::ZeroCount)
    );
}

#[test]
fn total_below_count_is_an_error() {
    let mut r = rng();
    for (total, count) in [(9, 10), (0, 1), (-5, 1), (-1, 3), (i64::MIN, 1)] {
        let e = || {
            Err(SplitError::TotalTooSmall {
                total_cents: total,
                count,
            })
        };
        assert_eq!(fixed(total, count), e());
        assert_eq!(double_mean(total, count, &mut r), e());
        assert_eq!(line_cut(total, count, &mut r), e());
        for mode in [Mode::Lucky, Mode::Fixed] {
            for lucky in [LuckySplit::DoubleMean, LuckySplit::LineCut] {
                assert_eq!(split(total, count, mode, lucky, &mut r), e());
            }
        }
    }
}

#[test]
fn fixed_splits_evenly_or_refuses() {
    assert_eq!(fixed(1000, 4).unwrap(), vec![250; 4]);
    assert_eq!(fixed(7, 7).unwrap(), vec![1; 7]);
    assert_eq!(
        fixed(1000, 3),
        Err(SplitError::NotDivisible {
            total_cents: 1000,
            count: 3
        })
    );
    assert_eq!(
        fixed(10_001, 10),
        Err(SplitError::NotDivisible {
            total_cents: 10_001,
            count: 10
        })
    );
    // Lucky mode accepts the indivisible total; fixed mode ignores `lucky`.
    let mut r = rng();
    assert!(split(1000, 3, Mode::Lucky, LuckySplit::DoubleMean, &mut r).is_ok());
    for lucky in [LuckySplit::DoubleMean, LuckySplit::LineCut] {
        assert_eq!(
            split(1000, 3, Mode::Fixed, lucky, &mut r),
            Err(SplitError::NotDivisible {
                total_cents: 1000,
                count: 3
            })
        );
        assert_eq!(
            split(900, 3, Mode::Fixed, lucky, &mut r).unwrap(),
            vec![300; 3]
        );
    }
}

#[test]
fn huge_totals_do_not_overflow() {
    let mut r = rng();
    for total in [i64::MAX, i64::MAX - 1, 1_000_000_000_000_000_000] {
        for count in [2u32, 3, 1000] {
            for s in [
                double_mean(total, count, &mut r).unwrap(),
                line_cut(total, count, &mut r).unwrap(),
            ] {
                assert_eq!(s.len(), count as usize);
                assert!(s.iter().all(|&x| x >= 1));
                let sum: i128 = s.iter().map(|&x| i128::from(x)).sum();
                assert_eq!(sum, i128::from(total));
            }
        }
    }
}

/// Exact rational number for the exhaustive expectation test.
#[derive(Clone, Copy, Debug)]
struct Frac(u128, u128);

impl Frac {
    fn new(n: u128, d: u128) -> Frac {
        fn gcd(a: u128, b: u128) -> u128 {
            if b == 0 {
                a
            } else {
                gcd(b, a % b)
            }
        }
        let g = gcd(n, d).max(1);
        Frac(n / g, d / g)
    }
    fn add(self, o: Frac) -> Frac {
        Frac::new(self.0 * o.1 + o.0 * self.1, self.1 * o.1)
    }
    fn mul(self, o: Frac) -> Frac {
        Frac::new(self.0 * o.0, self.1 * o.1)
    }
}

/// Exact expected share at each of the `left` remaining positions of the
/// double-mean rule, given `remaining` cents; also checks the bounds of
/// every reachable draw.
fn dm_expectation(
    remaining: u64,
    left: u64,
    memo: &mut std::collections::HashMap<(u64, u64), Vec<Frac>>,
) -> Vec<Frac> {
    if left == 1 {
        return vec![Frac(u128::from(remaining), 1)];
    }
    if let Some(v) = memo.get(&(remaining, left)) {
        return v.clone();
    }
    let (q, r) = double_mean_params(remaining, left);
    assert!(q >= 2, "R={remaining} L={left}");
    // The implemented procedure: y uniform on 1..=q; y < q is kept; y == q
    // is kept with probability r/L, else redrawn uniformly on 1..=q-1.
    let mut law: Vec<(u64, Frac)> = (1..q).map(|y| (y, Frac(1, u128::from(q)))).collect();
    law.push((
        q,
        Frac::new(u128::from(r), u128::from(left) * u128::from(q)),
    ));
    let redraw = Frac::new(
        u128::from(left - r),
        u128::from(left) * u128::from(q) * u128::from(q - 1),
    );
    for z in 1..q {
        law.push((z, redraw));
    }
    let mut out = vec![Frac(0, 1); left as usize];
    let mut total_p = Frac(0, 1);
    for (share, p) in law {
        if p.0 == 0 {
            continue;
        }
        assert!(share <= remaining - (left - 1), "R={remaining} L={left}");
        assert!(share <= 2 * remaining / left, "R={remaining} L={left}");
        total_p = total_p.add(p);
        out[0] = out[0].add(p.mul(Frac(u128::from(share), 1)));
        let rest = dm_expectation(remaining - share, left - 1, memo);
        for (o, e) in out[1..].iter_mut().zip(rest) {
            *o = o.add(p.mul(e));
        }
    }
    assert_eq!((total_p.0, total_p.1), (1, 1), "R={remaining} L={left}");
    memo.insert((remaining, left), out.clone());
    out
}

/// Exhaustive, exact (rational) expectation of the double-mean rule for
/// small packets: the expected share is exactly total/count at every
/// position. The uncorrected rule (uniform on 1..=floor(2R/L)) fails this.
#[test]
fn double_mean_is_exactly_unbiased_small_cases() {
    let mut memo = std::collections::HashMap::new();
    for count in 1..=6u64 {
        for total in count..=40u64 {
            let exp = dm_expectation(total, count, &mut memo);
            assert_eq!(exp.len() as u64, count);
            for (pos, e) in exp.iter().enumerate() {
                assert_eq!(
                    e.0 * u128::from(count),
                    u128::from(total) * e.1,
                    "total={total} count={count} pos={pos} E={}/{}",
                    e.0,
                    e.1
                );
            }
        }
    }
}

#[test]
fn floyd_vec_and_btree_agree() {
    for (n, k) in [
        (0, 0),
        (1, 1),
        (5, 2),
        (9, 9),
        (19_999, 99),
        (1_000_000_000, 300),
        (600, 599),
    ] {
        for seed in 0..20u64 {
            let a = floyd_sorted_vec(n, k, &mut StdRng::seed_from_u64(seed));
            let b = floyd_btree(n, k, &mut StdRng::seed_from_u64(seed));
            assert_eq!(a, b);
            assert_eq!(a.len() as u64, k);
            assert!(a.windows(2).all(|w| w[0] < w[1]));
            assert!(a.iter().all(|&x| (1..=n).contains(&x)));
        }
    }
}

#[test]
fn wire_names_round_trip() {
    for m in [Mode::Lucky, Mode::Fixed] {
        assert_eq!(m.as_str().parse::<Mode>(), Ok(m));
        assert_eq!(m.to_string(), m.as_str());
    }
    for l in [LuckySplit::DoubleMean, LuckySplit::LineCut] {
        assert_eq!(l.as_str().parse::<LuckySplit>(), Ok(l));
        assert_eq!(l.to_string(), l.as_str());
    }
    assert_eq!(Mode::Lucky.as_str(), "lucky");
    assert_eq!(Mode::Fixed.as_str(), "fixed");
    assert_eq!(LuckySplit::DoubleMean.as_str(), "double_mean");
    assert_eq!(LuckySplit::LineCut.as_str(), "line_cut");
    assert_eq!(serde_json::to_string(&Mode::Lucky).unwrap(), "\"lucky\"");
    assert_eq!(
        serde_json::to_string(&LuckySplit::DoubleMean).unwrap(),
        "\"double_mean\""
    );
    assert_eq!(
        serde_json::from_str::<LuckySplit>("\"line_cut\"").unwrap(),
        LuckySplit::LineCut
    );
    assert_eq!(
        serde_json::from_str::<Mode>("\"fixed\"").unwrap(),
        Mode::Fixed
    );
    assert!(serde_json::from_str::<Mode>("\"Fixed\"").is_err());
    assert!("Lucky".parse::<Mode>().is_err());
    assert!("lineCut".parse::<LuckySplit>().is_err());
    assert!("".parse::<LuckySplit>().is_err());
}
